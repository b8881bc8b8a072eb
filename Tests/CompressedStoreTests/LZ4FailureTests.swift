@testable import CompressedStore
import HanekeProtocols
import Testing

/// What liblz4's failures become for users: each kind its own code, so that a chain removes an
/// entry only when its bytes are damaged.
struct LZ4FailureTests {
    @Test func anAllocationFailureIsOutOfMemoryNotCorrupted() {
        let error = LZ4.Failure.outOfMemory("could not allocate 1024 bytes").storeError(subject: "The 30-byte LZ4 frame")
        #expect(error.code == .outOfMemory)
        #expect(LZ4.Failure.corrupted("bad checksum").storeError(subject: "A frame").code == .corrupted)
        #expect(LZ4.Failure.compression("ERROR_generic").storeError(subject: "5 bytes").code == .encoding)
    }
}
