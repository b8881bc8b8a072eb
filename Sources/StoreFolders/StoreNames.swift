import Synchronization

/// Every name a store creates, and so every name it may ever remove. Names are matched byte for
/// byte against this grammar; anything else in the folder is foreign and is never changed.
///
/// | name | where | what |
/// |---|---|---|
/// | `.haneke-store` | the folder | the marker: this folder is a store's |
/// | `.haneke-journal` | the folder | the recency journal |
/// | `.haneke-values.sqlite`, `-wal`, `-shm`, `-journal` | the folder | `SQLiteStore`'s database, its log, its log's index and the rollback journal SQLite keeps while it creates the database (that store's to manage; a `FileStore` on the same folder leaves them alone) |
/// | `.haneke-tmp.<pid>.<n>` | the folder, a shard | a file being written (a journal rewrite, an entry) |
/// | `<H0H1>` | the folder | a shard folder: the first two upper-case hex digits of a key's MD5 |
/// | `<H0…H31>` | shard `<H0H1>` | an entry file: the key's whole MD5, upper-case hex |
package enum StoreNames {
    package static let marker = ".haneke-store"
    package static let journal = ".haneke-journal"
    /// `SQLiteStore`'s database; SQLite adds `-wal` and `-shm` for its log and the log's index, and
    /// `-journal` for the rollback journal of the transaction that creates the database (before
    /// it is in write-ahead mode).
    package static let smallValues = ".haneke-values.sqlite"
    /// The names of SQLite's companion files of ``smallValues``.
    package static let smallValuesCompanions = ["-wal", "-shm", "-journal"].map { smallValues + $0 }
    /// The counters of changes that the memory layers of the processes sharing the folder check
    /// (`ChangeCounters`): walked as the database's files are, another layer's, not the files'.
    package static let changes = ".haneke-changes"
    private static let smallValuesNames = ([smallValues, changes] + smallValuesCompanions).map { Array($0.utf8) }
    private static let temporaryPrefix = Array(".haneke-tmp.".utf8)
    private static let temporaryCounter = Atomic<UInt64>(0)

    /// What a name is, in the folder or in a shard.
    package enum Kind: Equatable {
        case marker
        case journal
        /// `SQLiteStore`'s database or one of its companion files.
        case smallValues
        /// A temporary file, with its writer's process id.
        case temporary(writer: Int32)
        case shard(UInt8)
        case entry(KeyDigest)
        case foreign
    }

    /// A new temporary name, unique on this machine: the process id and a counter shared by every
    /// store in the process (so two stores on one folder never collide).
    package static func temporary() -> String {
        ".haneke-tmp.\(POSIX.processID).\(temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
    }

    /// What `name` is at the top of a store folder.
    static func classifyInFolder(_ name: UnsafeBufferPointer<UInt8>) -> Kind {
        if let shard = shard(name) { return .shard(shard) }
        if name.elementsEqual(marker.utf8) { return .marker }
        if name.elementsEqual(journal.utf8) { return .journal }
        if smallValuesNames.contains(where: { name.elementsEqual($0) }) { return .smallValues }
        if let writer = temporaryWriter(name) { return .temporary(writer: writer) }
        return .foreign
    }

    /// What `name` is inside the shard folder `shard`.
    package static func classifyInShard(_ name: UnsafeBufferPointer<UInt8>, shard: UInt8) -> Kind {
        if name.count == 32, let digest = KeyDigest(hex: name), digest.firstByte == shard { return .entry(digest) }
        if let writer = temporaryWriter(name) { return .temporary(writer: writer) }
        return .foreign
    }

    /// The shard a folder name stands for: exactly two upper-case hex digits.
    package static func shard(_ name: UnsafeBufferPointer<UInt8>) -> UInt8? {
        guard name.count == 2, let high = hexValue(name[0]), let low = hexValue(name[1]) else { return nil }
        return high << 4 | low
    }

    /// The name of a shard's folder.
    package static func shardName(_ shard: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(shard >> 4)], digits[Int(shard & 0x0F)]], as: UTF8.self)
    }

    /// The writer's process id of a temporary name `.haneke-tmp.<pid>.<n>`: decimal numbers
    /// without leading zeros, a positive 32-bit pid and a 64-bit counter from 1; `nil` for any
    /// other name.
    static func temporaryWriter(_ name: UnsafeBufferPointer<UInt8>) -> Int32? {
        guard name.count > temporaryPrefix.count, name.prefix(temporaryPrefix.count).elementsEqual(temporaryPrefix) else { return nil }
        let rest = name[temporaryPrefix.count...]
        guard let dot = rest.firstIndex(of: UInt8(ascii: ".")),
              let pid = decimal(rest[..<dot], maximum: UInt64(Int32.max)),
              decimal(rest[(dot + 1)...], maximum: UInt64.max) != nil else { return nil }
        return Int32(pid)
    }

    private static func decimal(_ digits: Slice<UnsafeBufferPointer<UInt8>>, maximum: UInt64) -> UInt64? {
        guard let first = digits.first, first != UInt8(ascii: "0"), digits.count <= 20 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow, !carry, sum <= maximum else { return nil }
            value = sum
        }
        return value
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A name inside a folder, as the bytes the file system holds: not always valid UTF-8, so it is
/// kept as bytes to act on it, and escaped to show it.
package struct FileName: Hashable, Sendable, CustomStringConvertible {
    package var bytes: [UInt8]

    package init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = Array(bytes)
    }

    package init(_ string: String) {
        self.bytes = Array(string.utf8)
    }

    /// Calls `body` with the name as a C string.
    package func withCString<T, Failure: Error>(_ body: (UnsafePointer<CChar>) throws(Failure) -> T) throws(Failure) -> T {
        let terminated = bytes.map { CChar(bitPattern: $0) } + [0]
        let result = terminated.withUnsafeBufferPointer { buffer in
            Result { () throws(Failure) -> T in try body(buffer.baseAddress!) }
        }
        return try result.get()
    }

    /// The name as text: valid UTF-8 as it is, except that control characters and backslashes are
    /// escaped; other bytes as `\xFF`.
    package var description: String {
        var text = ""
        var index = 0
        while index < bytes.count {
            // Take the longest valid UTF-8 run from here.
            var end = index
            while end < bytes.count {
                let width = Self.sequenceWidth(bytes, at: end)
                if width == 0 { break }
                end += width
            }
            if end > index {
                for scalar in String(decoding: bytes[index..<end], as: UTF8.self).unicodeScalars {
                    if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\\" {
                        text += scalar == "\\" ? "\\\\" : "\\u{\(String(scalar.value, radix: 16))}"
                    } else {
                        text.unicodeScalars.append(scalar)
                    }
                }
                index = end
            } else {
                text += "\\x" + String(bytes[index], radix: 16, uppercase: true).leftPadded(to: 2)
                index += 1
            }
        }
        return text
    }

    /// The length of the valid UTF-8 sequence at `index`, or 0.
    private static func sequenceWidth(_ bytes: [UInt8], at index: Int) -> Int {
        let first = bytes[index]
        let width: Int
        switch first {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: width = 2
        case 0xE0...0xEF: width = 3
        case 0xF0...0xF4: width = 4
        default: return 0
        }
        guard index + width <= bytes.count else { return 0 }
        let slice = bytes[index..<(index + width)]
        return String(validating: slice, as: UTF8.self) == nil ? 0 : width
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
