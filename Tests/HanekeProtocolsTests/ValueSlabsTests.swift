import Foundation
@testable import HanekeProtocols
import TestSupport
import Testing

/// The slabs decoded values live in: size classes, slots reused, chunks prepared ahead, spare and
/// given back, and `Data` that owns a slot.
@Suite(.offThePool)
struct ValueSlabsTests {
    @Test func everySizeInTheRangeGetsASlotAtMostAFifthLarger() throws {
        var previous = 0
        for index in 0..<ValueSlabs.classCount {
            let size = ValueSlabs.slotSize(ofClass: index)
            #expect(size > previous && size % 256 == 0)
            previous = size
        }
        #expect(previous == ValueSlabs.sizeRange.upperBound)
        for count in ValueSlabs.sizeRange {
            let index = try #require(ValueSlabs.classIndex(for: count))
            let size = ValueSlabs.slotSize(ofClass: index)
            #expect(size >= count && size - count <= size / 5, "\(count) bytes → a slot of \(size)")
            if index > 0 { #expect(ValueSlabs.slotSize(ofClass: index - 1) < count) }
        }
        #expect(ValueSlabs.classIndex(for: 1023) == nil)
        #expect(ValueSlabs.classIndex(for: (64 << 10) + 1) == nil)
        #expect(ValueSlabs.slotSize(ofClass: ValueSlabs.classIndex(for: 4096)!) == 4096)
    }

    @Test func sizesOutsideTheRangeAreNotServed() {
        let slabs = ValueSlabs(prepares: false)
        #expect(slabs.allocate(512) == nil)
        #expect(slabs.allocate(1 << 20) == nil)
        #expect(slabs.statistics == ValueSlabs.Statistics())
    }

    @Test func slotsAreDistinctAlignedAndReusedOnceFreed() {
        let slabs = ValueSlabs(prepares: false)
        let slots = (0..<100).map { _ in slabs.allocate(4096)! }
        #expect(Set(slots).count == 100)
        for (index, slot) in slots.enumerated() {
            #expect(UInt(bitPattern: slot) % 4096 == 0)
            slot.initializeMemory(as: UInt8.self, repeating: UInt8(index), count: 4096)
        }
        for (index, slot) in slots.enumerated() {
            let bytes = UnsafeRawBufferPointer(start: slot, count: 4096)
            #expect(bytes.allSatisfy { $0 == UInt8(index) })
        }
        #expect(slabs.statistics.liveSlots == 100)
        slabs.release(slots[41])
        slabs.release(slots[7])
        // Last freed, first reused.
        #expect(slabs.allocate(4000) == slots[7])
        #expect(slabs.allocate(4096) == slots[41])
        for slot in slots { slabs.release(slot) }
        #expect(slabs.statistics.liveSlots == 0)
        #expect(slabs.statistics.mappedChunks == 1)
    }

    @Test func aFullChunkLeadsToTheNextAndAnEmptyOneIsASpareOrGivenBack() {
        let slabs = ValueSlabs(spareTarget: 0, spareLimit: 1, prepares: false)
        let perChunk = ValueSlabs.chunkSize / (64 << 10)
        let first = (0..<perChunk).map { _ in slabs.allocate(64 << 10)! }
        let second = (0..<perChunk).map { _ in slabs.allocate(60 << 10)! }   // the same class
        let third = slabs.allocate(64 << 10)!
        #expect(slabs.statistics.mappedChunks == 3)
        #expect(slabs.statistics.chunksMappedOnDemand == 3)
        // The first chunk empties: a spare (the limit is one); the second: back to the system.
        for slot in first { slabs.release(slot) }
        #expect(slabs.statistics.spareChunks == 1)
        for slot in second { slabs.release(slot) }
        #expect(slabs.statistics.chunksUnmapped == 1)
        #expect(slabs.statistics.mappedChunks == 2)
        // A value of another class takes the spare rather than mapping a chunk.
        let other = slabs.allocate(1500)!
        #expect(slabs.statistics.spareChunks == 0)
        #expect(slabs.statistics.chunksMappedOnDemand == 3)
        // The third chunk fills; a fourth is mapped. A slot freed in the full third chunk makes it
        // partial: once the fourth is full too, the class takes that slot before mapping a fifth.
        let rest = (1..<perChunk).map { _ in slabs.allocate(64 << 10)! }
        let fourth = (0..<perChunk).map { _ in slabs.allocate(64 << 10)! }
        #expect(slabs.statistics.chunksMappedOnDemand == 4)
        slabs.release(rest[3])
        #expect(slabs.allocate(64 << 10) == rest[3])
        #expect(slabs.statistics.chunksMappedOnDemand == 4)
        for slot in rest + fourth + [third, other] { slabs.release(slot) }
        #expect(slabs.statistics.liveSlots == 0)
    }

    @Test func thePreparerKeepsChunksReady() {
        let slabs = ValueSlabs(spareTarget: 2, spareLimit: 4)
        let slot = slabs.allocate(2048)!
        slabs.waitForPreparer()
        #expect(slabs.statistics.chunksMappedOnDemand == 1)
        #expect(slabs.statistics.chunksPrepared == 2)
        #expect(slabs.statistics.spareChunks == 2)
        // A class that needs a chunk takes a ready one, and the preparer makes its replacement.
        let other = slabs.allocate(8192)!
        slabs.waitForPreparer()
        #expect(slabs.statistics.chunksMappedOnDemand == 1)
        #expect(slabs.statistics.chunksPrepared == 3)
        #expect(slabs.statistics.spareChunks == 2)
        slabs.release(slot)
        slabs.release(other)
    }

    @Test func dataOwningASlotGivesItBackHoweverItWasChanged() {
        let slabs = ValueSlabs(prepares: false)
        func value(_ byte: UInt8) -> Data {
            let slot = slabs.allocate(3000)!
            slot.initializeMemory(as: UInt8.self, repeating: byte, count: 3000)
            return slabs.data(owning: slot, count: 3000)
        }
        do {
            var grown = value(1)
            grown.append(contentsOf: [2, 3])
            #expect(grown.count == 3002 && grown.last == 3 && grown.first == 1)
            var shrunk = value(4)
            shrunk.removeLast(1000)
            #expect(shrunk.count == 2000 && shrunk.allSatisfy { $0 == 4 })
            var replaced = value(5)
            replaced.replaceSubrange(10..<20, with: Data([9]))
            #expect(replaced.count == 2991 && replaced[10] == 9)
            var reset = value(6)
            reset.count = 0
            #expect(reset.isEmpty)
            let kept = value(7)
            var copy = kept
            copy[0] = 8
            #expect(kept[0] == 7 && copy[0] == 8)
            #expect(slabs.statistics.liveSlots >= 1)
        }
        #expect(slabs.statistics.liveSlots == 0)
    }

    @Test func threadsAllocatingAndFreeingAtOnceKeepEachValueTheirOwn() {
        let slabs = ValueSlabs(spareTarget: 1, spareLimit: 2)
        let sizes = [1024, 1500, 4096, 9000, 65536]
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            var random = SystemRandomNumberGenerator()
            var held: [(UnsafeMutableRawPointer, Int, UInt8)] = []
            for step in 0..<20_000 {
                if held.count < 64, Bool.random(using: &random) || held.isEmpty {
                    let size = sizes[step % sizes.count]
                    let slot = slabs.allocate(size)!
                    let byte = UInt8(truncatingIfNeeded: thread &* 31 &+ step)
                    slot.initializeMemory(as: UInt8.self, repeating: byte, count: size)
                    held.append((slot, size, byte))
                } else {
                    let (slot, size, byte) = held.remove(at: Int.random(in: 0..<held.count, using: &random))
                    let bytes = UnsafeRawBufferPointer(start: slot, count: size)
                    precondition(bytes.allSatisfy { $0 == byte }, "a slot changed while its value held it")
                    slabs.release(slot)
                }
            }
            for (slot, _, _) in held { slabs.release(slot) }
        }
        slabs.waitForPreparer()
        #expect(slabs.statistics.liveSlots == 0)
    }
}
