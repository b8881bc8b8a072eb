// Fuzzes FileStore's read of an entry file: the header parser, the key comparison, the size checks
// and the payload hand-off, with and without a size from the index.
@_spi(Fuzzing) import FileStore
import Foundation

let store: FileStore = {
    let folder = NSTemporaryDirectory() + "haneke-fuzz-store-\(getpid())"
    return try! FileStore(directory: folder, configuration: .init(capacity: 64 << 20))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntryFile(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: start, count: count)
    // The seeds are files written for key "k"; other inputs are other keys' files or garbage.
    for (key, hint) in [("k", false), ("k", true), ("another key", false)] {
        let outcome = store.readEntryForFuzzing(bytes, key: key, sizeHint: hint)
        // A value handed out must be no larger than the file it came from.
        if outcome.hasPrefix("value "), let size = Int(outcome.dropFirst(6)), size > count {
            fatalError("a \(size)-byte value from a \(count)-byte file")
        }
    }
    return 0
}
