// Fuzzes the LZ4 frame decoder of CompressedStore (through the system liblz4) and the header reader:
// nothing may crash, allocate past the limit, or decode to more than the limit.
import CompressedStore
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLZ4Frame(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let frame = Data(bytes: start, count: count)
    let limit = 1 << 20
    if let value = try? LZ4Frame.decompress(frame, limit: limit) {
        precondition(value.count <= limit, "decoded past the limit")
        // What decodes, re-encodes and decodes to itself.
        if let again = try? LZ4Frame.compress(value), let back = try? LZ4Frame.decompress(again, limit: limit) {
            precondition(back == value, "a round trip changed the value")
        }
    }
    _ = LZ4Frame.recordedContentSize(of: frame)
    return 0
}
