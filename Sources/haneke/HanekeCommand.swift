import ArgumentParser
import Foundation

/// `haneke`: the framework's main job made visible, and tools for cache folders.
@main
struct HanekeCommand: AsyncParsableCommand {
    /// Runs the command; any error is one line on stderr (`haneke: …`) and a non-zero exit status,
    /// usage mistakes included (`--help` shows the usage).
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help, --version: ArgumentParser's own output, on stdout.
                print(fullMessage(for: error))
            } else {
                let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
                if !message.isEmpty { printError("haneke: " + message) }
            }
            Foundation.exit(code.rawValue)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "haneke",
        abstract: "Run the Haneke demo, and inspect, verify, read and trim cache folders.",
        discussion: """
        A cache folder (DIR) is one FileStore: the folder of one format of a cache, such as
        ~/.cache/haneke/<cache>/original. Files are named by the MD5 of their key, in shard folders
        named by its first two hex digits, and each starts with a header holding the key.
        """,
        subcommands: [Demo.self, Inspect.self, Get.self, Verify.self, Trim.self, Stats.self]
    )
}
