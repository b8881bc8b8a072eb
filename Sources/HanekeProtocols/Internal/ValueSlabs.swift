package import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Memory for the values a store decodes (1 KiB to 64 KiB): 2 MiB chunks, each cut into slots of
/// one size class, made ready ahead of need by a thread of their own.
///
/// Why not `malloc`: a value that a memory layer keeps is new memory, and on Linux new memory costs
/// a page fault on its first touch; a task's allocations also come from one of glibc's thread
/// arenas, which grows by one `mprotect` per page. Keeping a decoded 4 KiB value cost 2.4–5 µs that
/// way at the median on this project's 2-core VMs (a C loop of `malloc`, `memcpy` and keep), as much
/// as the rest of a compressed file read; a slot of a chunk prepared beforehand costs 0.1–0.2 µs.
/// A chunk is filled in with `MADV_POPULATE_WRITE` by the preparing thread, so no page faults on
/// the caller's thread. When no chunk is ready (a burst faster than the preparer), a chunk is mapped
/// on the spot and its pages fault as `malloc`'s would.
///
/// A chunk is small pages (`MADV_NOHUGEPAGE`), not one transparent huge page. A huge page the
/// kernel has just freed is cleared five times faster than 512 small ones (0.2 ms against 1.0–1.1
/// ms on this project's VMs), but a virtual machine that reports its free memory to the host
/// (virtio-balloon's free page reporting, which takes free blocks of 2 MiB and more, a few seconds
/// after they are freed) gets every new huge page back from the host: 6–9 ms each, measured the
/// same minutes, against 1.0–1.2 ms for small pages every time. The preparing thread shares the
/// machine with the readers, so the steady cost wins: with huge pages it spent 4–10 µs of CPU for
/// each 4 KiB value kept, beside a warm read of 10–15 µs, and slowed that read.
///
/// Size classes: four per doubling (1 KiB, then 1¼, 1½, 1¾ and 2 KiB, 2½ KiB, … 64 KiB), so a
/// slot leaves at most a fifth of itself unused (a 1,025-byte value takes 1,280 bytes) and a tenth
/// on average; a value of an exact class size (4,096 bytes) wastes nothing. Sizes outside the range
/// are `malloc`'s: below 1 KiB several values share a page anyway, above 64 KiB a chunk would hold
/// too few.
///
/// What it keeps: a freed slot is reused by the next value of its class; a chunk whose last value
/// is freed becomes a spare (at most ``spareLimit`` are kept, ready for any class) or goes back to
/// the system. So the memory it holds beyond its live values is at most the spares, plus, per size
/// class in use, the free slots of its partly used chunks.
///
/// Concurrency: one lock guards every chunk's books and the free slots' links (a free slot's first
/// four bytes hold the next free slot's offset); a slot in use belongs to its value alone. Mapping,
/// advising and populating run with the lock released; only the hand-over takes it.
package final class ValueSlabs: Sendable {
    /// The slabs every store of the process shares.
    package static let shared = ValueSlabs()

    /// The size of a chunk, and its alignment (a chunk is found from any of its values' addresses).
    static let chunkSize = 2 << 20
    /// The smallest and largest values the slabs serve.
    package static let sizeRange = 1024...(64 << 10)
    /// Size classes per doubling.
    private static let classesPerDoubling = 4
    /// How many classes there are: 1 KiB, then four for each doubling up to 64 KiB.
    static let classCount = 1 + classesPerDoubling * 6
    /// Chunks kept ready, populated, for the next class that fills its own.
    let spareTarget: Int
    /// Empty chunks kept at most (ready ones included); the rest are unmapped.
    let spareLimit: Int
    /// Whether chunks are populated ahead (off in a test that wants every chunk mapped on the spot).
    let prepares: Bool

    private let state: Locked<State>
    private let preparer = ThreadPool(width: 1, name: "haneke.slabs")

    /// The books of one chunk.
    private struct Chunk {
        var classIndex: Int
        /// Slots never handed out start here (an index).
        var untouched = 0
        /// The offset of the first free slot plus one; 0 when none.
        var freeHead: UInt32 = 0
        /// Slots in use.
        var live = 0
        var slotCount: Int
    }

    private struct State {
        /// Every chunk cut into slots, by base address.
        var chunks: [UInt: Chunk] = [:]
        /// Per class: the chunk slots are taken from.
        var current = [UInt?](repeating: nil, count: ValueSlabs.classCount)
        /// Per class: other chunks with a free slot.
        var partial = [Set<UInt>](repeating: [], count: ValueSlabs.classCount)
        /// Empty chunks, populated or not, ready for any class.
        var spares: [UInt] = []
        /// Chunks the preparer is making.
        var preparing = 0
        var statistics = Statistics()
    }

    /// What the slabs hold, for tests and benchmarks.
    package struct Statistics: Sendable, Equatable {
        /// Chunks mapped (cut into slots or spare).
        package var mappedChunks = 0
        /// Spare chunks.
        package var spareChunks = 0
        /// Slots in use.
        package var liveSlots = 0
        /// Chunks mapped on the caller's thread because none was ready.
        package var chunksMappedOnDemand = 0
        /// Chunks the preparer made.
        package var chunksPrepared = 0
        /// Chunks given back to the system.
        package var chunksUnmapped = 0
    }

    /// Creates slabs of their own (the process shares ``shared``; tests make their own).
    /// - Parameters:
    ///   - spareTarget: Chunks kept ready ahead of need: 2 by default.
    ///   - spareLimit: Empty chunks kept at most: 4 by default (8 MiB).
    ///   - prepares: Whether a thread populates chunks ahead of need: `true` by default.
    package init(spareTarget: Int = 2, spareLimit: Int = 4, prepares: Bool = true) {
        self.spareTarget = max(0, spareTarget)
        self.spareLimit = max(self.spareTarget, spareLimit)
        self.prepares = prepares
        state = Locked(State())
    }

    /// What the slabs hold now.
    package var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.spareChunks = state.spares.count
            return statistics
        }
    }

    // MARK: - Size classes

    /// The class a value of `count` bytes takes, or `nil` outside ``sizeRange``.
    static func classIndex(for count: Int) -> Int? {
        guard sizeRange.contains(count) else { return nil }
        guard count > sizeRange.lowerBound else { return 0 }
        // count is in (2^k, 2^(k+1)], k ≥ 10; the classes of that doubling are quarters of 2^k.
        let k = Int.bitWidth - (count - 1).leadingZeroBitCount - 1
        let quarter = 1 << (k - 2)
        let step = (count - (1 << k) + quarter - 1) / quarter   // 1...4
        return 1 + (k - 10) * classesPerDoubling + (step - 1)
    }

    /// The slot size of class `index`.
    static func slotSize(ofClass index: Int) -> Int {
        guard index > 0 else { return sizeRange.lowerBound }
        let doubling = (index - 1) / classesPerDoubling
        let step = (index - 1) % classesPerDoubling + 1
        return (1 << (10 + doubling)) + step * (1 << (8 + doubling))
    }

    // MARK: - Slots

    /// A slot for a value of `count` bytes, or `nil` when `count` is outside ``sizeRange`` or no
    /// memory could be mapped (the caller then uses `malloc`). Give it back with
    /// ``release(_:)``, or hand it to ``data(owning:count:)``.
    package func allocate(_ count: Int) -> UnsafeMutableRawPointer? {
        guard let classIndex = Self.classIndex(for: count) else { return nil }
        while true {
            let outcome = state.withLock { state -> Allocation in
                if let address = Self._takeSlot(classIndex, &state) { return .slot(address) }
                guard let spare = state.spares.popLast() else { return .needsChunk }
                Self._adopt(spare, classIndex, &state)
                let address = Self._takeSlot(classIndex, &state)
                return .slot(address!, prepare: _reservePreparations(&state))
            }
            switch outcome {
            case .slot(let address, let prepare):
                schedule(prepare)
                return UnsafeMutableRawPointer(bitPattern: address)
            case .needsChunk:
                // None ready: map one here (its pages fault as they are first written), and have
                // the preparer catch up.
                guard let base = Self.mapChunk() else { return nil }
                let prepare = state.withLock { state -> Int in
                    state.statistics.mappedChunks += 1
                    state.statistics.chunksMappedOnDemand += 1
                    state.spares.append(base)
                    return _reservePreparations(&state)
                }
                schedule(prepare)
            }
        }
    }

    private enum Allocation {
        case slot(UInt, prepare: Int = 0)
        case needsChunk
    }

    /// `Data` that owns the slot `pointer` (from ``allocate(_:)`` with the same `count`), giving it
    /// back when the last copy of the value goes.
    package func data(owning pointer: UnsafeMutableRawPointer, count: Int) -> Data {
        // The shared slabs' deallocator captures nothing, so that no closure context is allocated
        // for each value.
        let deallocator: Data.Deallocator = self === Self.shared
            ? .custom { pointer, _ in ValueSlabs.shared.release(pointer) }
            : .custom { [self] pointer, _ in release(pointer) }
        return Data(bytesNoCopy: pointer, count: count, deallocator: deallocator)
    }

    /// Gives back the slot `pointer`, which ``allocate(_:)`` returned. (The slot's chunk knows its
    /// size: `Data` may pass its deallocator a count that changed since.)
    package func release(_ pointer: UnsafeMutableRawPointer) {
        let address = UInt(bitPattern: pointer)
        let base = address & ~UInt(Self.chunkSize - 1)
        let unmap = state.withLock { state -> Bool in
            guard var chunk = state.chunks[base], Int(address - base) % Self.slotSize(ofClass: chunk.classIndex) == 0 else {
                preconditionFailure("ValueSlabs.release: \(pointer) is not a slot of these slabs")
            }
            let wasFull = chunk.freeHead == 0 && chunk.untouched == chunk.slotCount
            pointer.storeBytes(of: chunk.freeHead, as: UInt32.self)
            chunk.freeHead = UInt32(address - base) + 1
            chunk.live -= 1
            state.statistics.liveSlots -= 1
            let isCurrent = state.current[chunk.classIndex] == base
            guard chunk.live == 0, !isCurrent else {
                state.chunks[base] = chunk
                if wasFull, !isCurrent { state.partial[chunk.classIndex].insert(base) }
                return false
            }
            // Empty and not the chunk its class takes slots from: a spare, or back to the system.
            state.chunks[base] = nil
            state.partial[chunk.classIndex].remove(base)
            guard state.spares.count >= spareLimit else {
                state.spares.append(base)
                return false
            }
            state.statistics.mappedChunks -= 1
            state.statistics.chunksUnmapped += 1
            return true
        }
        if unmap { munmap(UnsafeMutableRawPointer(bitPattern: base), Self.chunkSize) }
    }

    /// A slot of class `classIndex` from its current chunk or one with a free slot; `nil` when
    /// every chunk of the class is full.
    private static func _takeSlot(_ classIndex: Int, _ state: inout State) -> UInt? {
        while true {
            guard let base = state.current[classIndex] ?? state.partial[classIndex].popFirst() else { return nil }
            state.current[classIndex] = base
            guard var chunk = state.chunks[base] else { preconditionFailure("ValueSlabs: lost a chunk") }
            let address: UInt
            if chunk.freeHead != 0 {
                address = base + UInt(chunk.freeHead - 1)
                chunk.freeHead = UnsafeRawPointer(bitPattern: address)!.load(as: UInt32.self)
            } else if chunk.untouched < chunk.slotCount {
                address = base + UInt(chunk.untouched * slotSize(ofClass: classIndex))
                chunk.untouched += 1
            } else {
                // Full: the next chunk becomes current; a release puts this one back in `partial`.
                state.current[classIndex] = nil
                continue
            }
            chunk.live += 1
            state.chunks[base] = chunk
            state.statistics.liveSlots += 1
            return address
        }
    }

    /// Cuts the spare chunk `base` into slots of class `classIndex`, and makes it the class's current
    /// chunk (called when every chunk of the class is full, so it has none).
    private static func _adopt(_ base: UInt, _ classIndex: Int, _ state: inout State) {
        state.chunks[base] = Chunk(classIndex: classIndex, slotCount: chunkSize / slotSize(ofClass: classIndex))
        state.current[classIndex] = base
    }

    /// How many chunks the preparer should start making now, counted as under way in the same
    /// turn of the lock (so two callers never ask for the same chunk).
    private func _reservePreparations(_ state: inout State) -> Int {
        guard prepares else { return 0 }
        let missing = max(0, spareTarget - state.spares.count - state.preparing)
        state.preparing += missing
        return missing
    }

    /// Has the preparer make `count` chunks, which ``_reservePreparations(_:)`` counted.
    private func schedule(_ count: Int) {
        for _ in 0..<count {
            preparer.submit { [self] in
                let base = Self.mapChunk(populated: true)
                state.withLock { state in
                    state.preparing -= 1
                    guard let base else { return }
                    state.statistics.mappedChunks += 1
                    state.statistics.chunksPrepared += 1
                    state.spares.append(base)
                }
            }
        }
    }

    /// Waits until every chunk asked of the preparer so far is made (for tests: it blocks the
    /// calling thread). The preparer runs one job at a time, in order, so a job queued now runs last.
    package func waitForPreparer() {
        let done = DispatchSemaphore(value: 0)
        preparer.submit { done.signal() }
        done.wait()
    }

    // MARK: - Mapping

    /// A new chunk of small pages, aligned to its size and, when `populated`, with every page
    /// already in memory; `nil` when the system has no memory to map.
    static func mapChunk(populated: Bool = false) -> UInt? {
        // Map twice the size, then give back what lies outside the aligned middle.
        let mapped = mmap(nil, 2 * chunkSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let mapped, mapped != MAP_FAILED else { return nil }
        let start = UInt(bitPattern: mapped)
        let base = (start + UInt(chunkSize) - 1) & ~UInt(chunkSize - 1)
        if base > start { munmap(mapped, Int(base - start)) }
        let end = base + UInt(chunkSize)
        let mappedEnd = start + UInt(2 * chunkSize)
        if mappedEnd > end { munmap(UnsafeMutableRawPointer(bitPattern: end), Int(mappedEnd - end)) }
        let chunk = UnsafeMutableRawPointer(bitPattern: base)!
        _ = madvise(chunk, chunkSize, MADV_NOHUGEPAGE)
        if populated, madvise(chunk, chunkSize, Self.populateWrite) != 0 {
            // A kernel before 5.14 has no MADV_POPULATE_WRITE: touch each page instead.
            for page in stride(from: 0, to: chunkSize, by: Int(getpagesize())) {
                chunk.storeBytes(of: 0, toByteOffset: page, as: UInt8.self)
            }
        }
        return base
    }

    /// `MADV_POPULATE_WRITE` (Linux 5.14), which Glibc's headers of this toolchain do not name.
    private static let populateWrite: Int32 = 23
}
