internal import CFileStoreShims
package import HanekeProtocols
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Counters of the changes made to a store folder, in a small file of the folder that every
/// process using it maps (`MAP_SHARED`), so that a memory layer in front of the folder can tell
/// that another process has set or removed a key it holds.
///
/// The file is an array of ``bucketCount`` 64-bit counters; a key's bucket is a hash of its UTF-8
/// bytes (the same in every process). A process that sets or removes a key adds one to its bucket
/// once the change is on disk (``changed(forKey:)``); ``changedEverything()`` adds one to every
/// bucket. A memory entry keeps a ``tag(forKey:)`` taken *before* its value was read from disk or
/// written: the bucket and its counter then. It is current (``isCurrent(_:)``) while the counter
/// has not moved: one atomic load of shared memory. A change of any key of the bucket moves it, so
/// an entry may be found stale that was not (a read from disk, never a stale value).
///
/// Concurrency: the counters are read and added to with atomic operations (acquire, release), by
/// any thread of any process; the mapping's address is published once, under `opening`'s lock,
/// and stays mapped until the counters are released. Until they are opened (the folder opens in
/// the background), every tag is current: a process sees no other process's changes before it has
/// opened the folder. A tag taken then is ``unopened``, which is not current once they are open.
///
/// The file is made private to the user (or the group, as the folder is), refused when it is a link
/// or not a regular file of one name, and never shrunk; a process that truncates it while another
/// maps it kills that one with `SIGBUS`, as truncating any mapped file does.
package final class ChangeCounters: Sendable {
    /// The number of counters: 32 KiB of shared memory.
    package static let bucketCount = 4_096
    /// The bits of a tag that keep the counter; the bits above keep the bucket.
    static let counterBits: UInt64 = 52
    static let counterMask: UInt64 = (1 << counterBits) - 1
    /// The tag taken before the counters are open: current until they are, stale afterwards (no
    /// counter reaches 2⁵² − 1).
    package static let unopened: UInt64 = .max

    /// The address of the mapping, 0 until it is made. Written once, under `opening`'s lock.
    private let address = Atomic<UInt>(0)
    /// Taken to open the counters, so that two openings map the file once.
    private let opening = Mutex<Void>(())

    /// Counters that are not yet open: every tag is current until ``open(in:)``.
    package init() {}

    deinit {
        let base = address.load(ordering: .acquiring)
        if base != 0 { munmap(UnsafeMutableRawPointer(bitPattern: base), Self.bucketCount * 8) }
    }

    /// Whether the counters are open.
    package var isOpen: Bool { address.load(ordering: .acquiring) != 0 }

    /// Maps the counters of `folder` (the file ``StoreNames/changes``), making the file when it is
    /// not there; does nothing when they are open.
    /// - Parameter folder: The store folder.
    /// - Throws: `StoreError` with code `notAStore` when the file is not a regular file of one
    ///   name, `io` when it cannot be made or mapped.
    package func open(in folder: SharedStoreFolder) throws(StoreError) {
        try opening.withLock { (_) throws(StoreError) in
            guard address.load(ordering: .acquiring) == 0 else { return }
            let descriptor = try folder.openFile(StoreNames.changes)
            defer { POSIX.close(descriptor) }
            let length = Self.bucketCount * 8
            let path = folder.path + "/" + StoreNames.changes
            // Never shrunk: a longer file (a later version's) keeps its tail.
            if let status = try? POSIX.status(of: descriptor, path: path), status.size < length, ftruncate(descriptor, off_t(length)) != 0 {
                throw StoreError(.io, "Could not size \(path): \(String(cString: strerror(errno)))", posixCode: POSIXErrorCode(rawValue: errno))
            }
            guard let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), base != MAP_FAILED else {
                throw StoreError(.io, "Could not map \(path): \(String(cString: strerror(errno)))", posixCode: POSIXErrorCode(rawValue: errno))
            }
            address.store(UInt(bitPattern: base), ordering: .releasing)
        }
    }

    /// The bucket of `key`: FNV-1a of its UTF-8 bytes, the same in every process.
    package static func bucket(of key: String) -> Int {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in key.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return Int(truncatingIfNeeded: (hash ^ hash >> 32) % UInt64(bucketCount))
    }

    /// What a memory entry of `key` keeps: its bucket and the bucket's counter now, or ``unopened``.
    /// Taken before the value is read from disk or written, so that a change made meanwhile moves
    /// the counter past it.
    /// - Parameter key: The key.
    /// - Returns: The tag.
    package func tag(forKey key: String) -> UInt64 {
        let base = address.load(ordering: .acquiring)
        guard base != 0 else { return Self.unopened }
        let bucket = Self.bucket(of: key)
        let counter = haneke_atomic_load_u64(UnsafeRawPointer(bitPattern: base), bucket)
        return UInt64(bucket) << Self.counterBits | counter & Self.counterMask
    }

    /// Whether no change of the tag's bucket has been counted since it was taken (always, before
    /// the counters are open). One atomic load of shared memory.
    /// - Parameter tag: A tag from ``tag(forKey:)``.
    /// - Returns: Whether the entry that keeps it may be served.
    @inline(__always)
    package func isCurrent(_ tag: UInt64) -> Bool {
        let base = address.load(ordering: .acquiring)
        guard base != 0 else { return true }
        let counter = haneke_atomic_load_u64(UnsafeRawPointer(bitPattern: base), Int(truncatingIfNeeded: tag >> Self.counterBits))
        return counter & Self.counterMask == tag & Self.counterMask
    }

    /// Counts a change of `key`, made on disk: every process's memory entries of its bucket are
    /// stale from now on. Does nothing before the counters are open.
    /// - Parameters:
    ///   - key: The key set or removed.
    ///   - tag: The tag the change's own memory entry keeps (taken before the change).
    /// - Returns: The tag that entry may keep instead, current after this change: when no other
    ///   change of the bucket was counted since `tag` was taken, then the disk holds the change's
    ///   value (a change after it is counted after it). `nil` otherwise.
    @discardableResult
    package func changed(forKey key: String, since tag: UInt64 = unopened) -> UInt64? {
        let base = address.load(ordering: .acquiring)
        guard base != 0 else { return nil }
        let bucket = Self.bucket(of: key)
        let before = haneke_atomic_add_u64(UnsafeMutableRawPointer(bitPattern: base), bucket, 1)
        guard tag != Self.unopened, UInt64(bucket) << Self.counterBits | before & Self.counterMask == tag else { return nil }
        return UInt64(bucket) << Self.counterBits | (before &+ 1) & Self.counterMask
    }

    /// Counts a change of every key (a removal of all of them, made on disk).
    package func changedEverything() {
        let base = address.load(ordering: .acquiring)
        guard base != 0 else { return }
        for bucket in 0..<Self.bucketCount {
            _ = haneke_atomic_add_u64(UnsafeMutableRawPointer(bitPattern: base), bucket, 1)
        }
    }
}
