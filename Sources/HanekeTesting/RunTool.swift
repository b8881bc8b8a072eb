import Foundation

/// Runs `executable` with `arguments` in `folder`, waits for it, and returns what it printed; it
/// must exit with 0. Blocks: an executor's job only.
///
/// Its output goes to a file in `folder`, not a pipe: a pipe's end inherited by a process another
/// test starts meanwhile would keep the pipe open, and a read to its end waiting, for good.
/// - Throws: ``RedisTestServer/Failure`` naming the command and what it printed.
func runTool(_ executable: String, _ arguments: [String], in folder: String) throws -> String {
    let log = folder + "/\((executable as NSString).lastPathComponent)-\(UUID().uuidString).log"
    guard FileManager.default.createFile(atPath: log, contents: nil), let output = FileHandle(forWritingAtPath: log) else {
        throw RedisTestServer.Failure(message: "Could not create \(log)")
    }
    defer {
        try? output.close()
        try? FileManager.default.removeItem(atPath: log)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: folder)
    process.standardOutput = output
    process.standardError = output
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    guard process.terminationStatus == 0 else {
        throw RedisTestServer.Failure(
            message: "\(executable) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus): \(text)"
        )
    }
    return text
}
