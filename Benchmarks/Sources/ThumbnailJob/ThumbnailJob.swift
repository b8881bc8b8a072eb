import Foundation
import HanekeProtocols
public import Images

/// Workload 8's resizing job, shared by its in-process figure and by ThumbnailProbe (the child
/// process whose peak memory it reads): read each file on the I/O executor, resize it with the
/// async API, write the thumbnail; `concurrency` files at a time.
public enum ThumbnailJob {
    /// Resizes `files` into `output` (each as `<name>.jpg`), `concurrency` at a time.
    public static func run(files: [String], output: String, resizer: ImageResizer, concurrency: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func add() {
                let file = files[next]
                next += 1
                group.addTask {
                    let data = try await IOExecutor.shared.run { try Data(contentsOf: URL(fileURLWithPath: file)) }
                    let thumbnail = try await resizer.resize(Image(data: data))
                    let name = ((file as NSString).lastPathComponent as NSString).deletingPathExtension + ".jpg"
                    try await IOExecutor.shared.run { try thumbnail.data.write(to: URL(fileURLWithPath: output + "/" + name)) }
                }
            }
            while next < min(concurrency, files.count) { add() }
            while try await group.next() != nil {
                if next < files.count { add() }
            }
        }
    }
}
