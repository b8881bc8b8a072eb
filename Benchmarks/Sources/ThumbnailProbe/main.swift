// Workload 8's child process for peak memory: resizes FILES to 256-pixel JPEG thumbnails (aspect
// fit, quality 0.85) into OUTDIR with ImageResizer's async API, CONCURRENCY at a time, and exits.
// The benchmark reads its peak resident size through PeakRSS (ru_maxrss from wait4), beside the same
// figure for vipsthumbnail and Pillow over the same files; with no files it gives the process's
// own floor.
//
//   ThumbnailProbe OUTDIR CONCURRENCY [FILES…]
import Foundation
import HanekeProtocols
import Images
import ThumbnailJob

let arguments = CommandLine.arguments
guard arguments.count >= 3, let concurrency = Int(arguments[2]), concurrency >= 1 else {
    FileHandle.standardError.write(Data("usage: ThumbnailProbe OUTDIR CONCURRENCY [FILES…]\n".utf8))
    exit(2)
}
let output = arguments[1]
let files = Array(arguments.dropFirst(3))
let resizer = ImageResizer(size: ImageSize(width: 256, height: 256), scaleMode: .aspectFit, outputFormat: .jpeg, compressionQuality: 0.85)
do {
    try await ThumbnailJob.run(files: files, output: output, resizer: resizer, concurrency: concurrency)
} catch {
    FileHandle.standardError.write(Data("ThumbnailProbe: \(error)\n".utf8))
    exit(1)
}

