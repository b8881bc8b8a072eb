import Foundation

/// Why a trace file could not be read.
enum TraceFileError: Error, CustomStringConvertible {
    /// The file could not be opened or read.
    case unreadable(path: String)
    /// A line's size field is not a non-negative decimal integer.
    case badSize(line: Int)
    /// A line has more than two fields.
    case extraField(line: Int)
    /// Some lines carry a size and this one does not, or the other way round.
    case mixedSizes(line: Int)
    /// The file could not be written.
    case unwritable(path: String)

    var description: String {
        switch self {
        case .unreadable(let path): "cannot read trace file \(path)"
        case .badSize(let line): "line \(line): the size must be a non-negative decimal integer"
        case .extraField(let line): "line \(line): expected 'key' or 'key size'"
        case .mixedSizes(let line): "line \(line): some lines have a size and others do not"
        case .unwritable(let path): "cannot write trace file \(path)"
        }
    }
}

/// Reads and writes the text trace format: one request per line, a key (any bytes but
/// whitespace), optionally followed by whitespace and a size in bytes. Blank lines are skipped
/// and a trailing carriage return is ignored. Either every line has a size or none does.
enum TraceFile {
    /// Reads a trace file, interning keys to dense ids in order of first appearance.
    /// - Parameters:
    ///   - path: The file to read.
    ///   - name: The label for reports; the file's name when nil.
    static func read(path: String, name: String? = nil) throws -> SimulationTrace {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TraceFileError.unreadable(path: path)
        }
        let label = name ?? URL(fileURLWithPath: path).lastPathComponent
        return try data.withUnsafeBytes { buffer in
            try parse(UnsafeRawBufferPointer(buffer), name: label)
        }
    }

    /// Parses trace text held in memory.
    /// - Parameters:
    ///   - bytes: The whole file's bytes.
    ///   - name: The label for reports.
    static func parse(_ bytes: UnsafeRawBufferPointer, name: String) throws -> SimulationTrace {
        var parser = TraceLineParser(bytes: bytes)
        return try parser.parseAll(name: name)
    }

    /// Writes a trace in the text format, keys spelled `k<id>`.
    /// - Parameters:
    ///   - trace: The trace to write; sizes are written when present.
    ///   - path: The destination, replaced if it exists.
    static func write(_ trace: SimulationTrace, to path: String) throws {
        var output = [UInt8]()
        output.reserveCapacity(trace.requestCount * (trace.sizes == nil ? 8 : 14))
        for index in 0..<trace.requestCount {
            output.append(UInt8(ascii: "k"))
            appendDecimal(Int(trace.keys[index]), to: &output)
            if let sizes = trace.sizes {
                output.append(UInt8(ascii: " "))
                appendDecimal(sizes[index], to: &output)
            }
            output.append(UInt8(ascii: "\n"))
        }
        guard FileManager.default.createFile(atPath: path, contents: Data(output)) else {
            throw TraceFileError.unwritable(path: path)
        }
    }

    /// Appends the decimal digits of a non-negative integer.
    private static func appendDecimal(_ value: Int, to output: inout [UInt8]) {
        var divisor = 1
        while divisor <= value / 10 {
            divisor *= 10
        }
        var remaining = value
        while divisor > 0 {
            output.append(UInt8(ascii: "0") + UInt8(remaining / divisor))
            remaining %= divisor
            divisor /= 10
        }
    }
}

/// The byte-level line splitter and field parser behind `TraceFile.read`.
private struct TraceLineParser {
    private let bytes: UnsafeRawBufferPointer
    private var interner: KeyInterner
    private var keys: [Int32] = []
    private var sizes: [Int] = []
    /// Whether lines carry sizes; decided by the first non-blank line.
    private var hasSizes: Bool?

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        interner = KeyInterner(bytes: bytes)
    }

    /// Parses every line and builds the trace.
    mutating func parseAll(name: String) throws -> SimulationTrace {
        var lineStart = 0
        var lineNumber = 0
        while lineStart < bytes.count {
            lineNumber += 1
            var lineEnd = lineStart
            while lineEnd < bytes.count && bytes[lineEnd] != UInt8(ascii: "\n") {
                lineEnd += 1
            }
            try parseLine(from: lineStart, to: lineEnd, number: lineNumber)
            lineStart = lineEnd + 1
        }
        return SimulationTrace(name: name, keys: keys, sizes: hasSizes == true ? sizes : nil,
                               keyCount: interner.count)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    /// Returns the first index at or after `start` (below `end`) whose byte's spaceness equals `space`.
    private func skip(from start: Int, to end: Int, whileSpace space: Bool) -> Int {
        var index = start
        while index < end && Self.isSpace(bytes[index]) == space {
            index += 1
        }
        return index
    }

    /// Parses one line `[start, end)`: key, optional size.
    private mutating func parseLine(from start: Int, to end: Int, number: Int) throws {
        let keyStart = skip(from: start, to: end, whileSpace: true)
        guard keyStart < end else { return }  // blank line
        let keyEnd = skip(from: keyStart, to: end, whileSpace: false)
        let sizeStart = skip(from: keyEnd, to: end, whileSpace: true)
        let sizeEnd = skip(from: sizeStart, to: end, whileSpace: false)
        guard skip(from: sizeEnd, to: end, whileSpace: true) == end else {
            throw TraceFileError.extraField(line: number)
        }
        let lineHasSize = sizeStart < end
        if hasSizes == nil {
            hasSizes = lineHasSize
        } else if hasSizes != lineHasSize {
            throw TraceFileError.mixedSizes(line: number)
        }
        keys.append(interner.intern(start: keyStart, length: keyEnd - keyStart))
        if lineHasSize {
            sizes.append(try parseSize(from: sizeStart, to: sizeEnd, line: number))
        }
    }

    /// Parses a decimal size, rejecting signs, other characters and values that overflow.
    private func parseSize(from start: Int, to end: Int, line: Int) throws -> Int {
        var value = 0
        for index in start..<end {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else {
                throw TraceFileError.badSize(line: line)
            }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !overflow1 && !overflow2 else { throw TraceFileError.badSize(line: line) }
            value = sum
        }
        return value
    }
}

/// Interns byte-string keys (slices of one buffer) to dense `Int32` ids with an open-addressing
/// hash table, so no `String` is ever created per line.
private struct KeyInterner {
    private let bytes: UnsafeRawBufferPointer
    /// Id stored in each slot, -1 when empty; the table's size is a power of two.
    private var slots: [Int32]
    private var keyStarts: [Int] = []
    private var keyLengths: [Int32] = []
    private var keyHashes: [UInt64] = []

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        slots = [Int32](repeating: -1, count: 1 << 16)
    }

    /// Number of distinct keys interned so far.
    var count: Int { keyStarts.count }

    /// The id of the key at `bytes[start..<start+length]`, assigning the next id when new.
    mutating func intern(start: Int, length: Int) -> Int32 {
        let hash = hashBytes(start: start, length: length)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let id = slots[slot]
            if id < 0 {
                return insert(start: start, length: length, hash: hash, slot: slot)
            }
            if keyHashes[Int(id)] == hash && equalKeys(Int(id), start: start, length: length) {
                return id
            }
            slot = (slot + 1) & mask
        }
    }

    private mutating func insert(start: Int, length: Int, hash: UInt64, slot: Int) -> Int32 {
        let id = Int32(keyStarts.count)
        keyStarts.append(start)
        keyLengths.append(Int32(length))
        keyHashes.append(hash)
        slots[slot] = id
        if keyStarts.count * 2 > slots.count {
            grow()
        }
        return id
    }

    /// Doubles the table and reinserts every id.
    private mutating func grow() {
        slots = [Int32](repeating: -1, count: slots.count * 2)
        let mask = slots.count - 1
        for id in 0..<keyStarts.count {
            var slot = Int(truncatingIfNeeded: keyHashes[id]) & mask
            while slots[slot] >= 0 {
                slot = (slot + 1) & mask
            }
            slots[slot] = Int32(id)
        }
    }

    private func equalKeys(_ id: Int, start: Int, length: Int) -> Bool {
        guard Int(keyLengths[id]) == length else { return false }
        let other = keyStarts[id]
        guard let base = bytes.baseAddress else { return length == 0 }
        return memcmp(base + other, base + start, length) == 0
    }

    /// A 64-bit hash of a byte slice: 8-byte words folded multiplicatively, then mixed.
    private func hashBytes(start: Int, length: Int) -> UInt64 {
        var hash: UInt64 = 0x243F_6A88_85A3_08D3 ^ UInt64(length)
        var index = start
        let end = start + length
        while index + 8 <= end {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            hash = (hash ^ word) &* 0x9E37_79B9_7F4A_7C15
            hash ^= hash >> 29
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < end {
            tail |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        return SimulationRandom.mix64(hash ^ tail)
    }
}
