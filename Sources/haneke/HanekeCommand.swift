import ArgumentParser
import Foundation
import Haneke

/// `haneke`: the framework's main job made visible, and tools for cache folders.
@main
struct HanekeCommand: AsyncParsableCommand {
    /// Runs the command; any error is one line on stderr (`haneke: …`) and an ``ExitStatus``,
    /// usage mistakes included (`--help` shows the usage).
    static func main() async {
        // libvips prints a warning on stderr for each damaged image it reads (GLib's log, domain
        // VIPS), before the error the Images module throws; `thumbnail` reports each such image on
        // one line instead. VIPS_WARNING, read once as libvips starts, silences them.
        setenv("VIPS_WARNING", "0", 0)
        do {
            try refuseHelpForUnknownCommands(Array(CommandLine.arguments.dropFirst()))
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let (status, line) = ToolError.report(error)
            if status == .ok {
                print(line)   // --help, --version: ArgumentParser's own output, on stdout.
            } else if !line.isEmpty {
                printError("haneke: " + line)
            }
            Foundation.exit(status.rawValue)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "haneke",
        abstract: "Run the Haneke demos (JSON, thumbnails), inspect, verify, read and trim cache folders, and run a caching HTTP proxy.",
        discussion: """
        A cache folder (DIR) is one FileStore: the folder of one format of a cache, such as \
        ~/.cache/haneke/<cache>/original. Files are named by the MD5 of their key, in shard folders \
        named by its first two hex digits, and each starts with a header holding the key.

        Keys in tables and messages are escaped (control characters as \\n, \\u{1b}…) and cut \
        after 200 characters; --json output holds them whole. Progress is shown on stderr only \
        when it is a terminal.

        Shell completion: `haneke --generate-completion-script bash|zsh|fish` prints the script \
        for that shell. Man page: `swift package generate-manual` writes haneke.1 under \
        .build/plugins/GenerateManual/outputs/haneke/. `make install` installs the tool, its man page (`man haneke`) and the three \
        completion scripts.
        """ + ExitStatus.help,
        version: HanekeVersion.description,
        subcommands: [Demo.self, Thumbnail.self, Inspect.self, Get.self, Verify.self, Trim.self, Stats.self, Proxy.self]
    )

    /// `haneke` alone is a usage mistake (exit status 2): a command is needed.
    func run() async throws {
        throw ToolError.usage("a command is needed: \(Self.commandNames.joined(separator: ", ")) (`haneke --help` describes them)")
    }

    /// The subcommands' names, in the order `--help` lists them.
    static var commandNames: [String] {
        configuration.subcommands.map { $0._commandName }
    }

    /// `haneke help NAME` for a NAME that is no command: a usage mistake, where ArgumentParser
    /// prints the general help and exits 0.
    static func refuseHelpForUnknownCommands(_ arguments: [String]) throws {
        guard arguments.first == "help", arguments.count > 1 else { return }
        for name in arguments.dropFirst() where !name.hasPrefix("-") {
            guard commandNames.contains(name) else {
                throw ToolError.usage("there is no command '\(name)'; the commands are \(commandNames.joined(separator: ", "))")
            }
        }
    }
}
