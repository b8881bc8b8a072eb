import Foundation
import HanekeProtocols
import Logging

/// A format's identity on disk: its name, and the digest of its ``Format/version`` when it has one.
/// The folder of a format with a version is `<name>~<16 hex digits>`; `~` never appears in an
/// escaped name, so a version change always means another folder, and values made under the old
/// settings are never read again.
enum FormatIdentity {
    /// The folder name of `format` inside its cache's folder.
    static func folderName<Value>(of format: Format<Value>) -> String {
        let name = CacheDirectory.pathComponent(format.name)
        guard let version = format.version else { return name }
        return name + "~" + digest(version)
    }

    /// FNV-1a, 64 bits, as 16 upper-case hexadecimal digits: a folder name, not a secret.
    static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16, uppercase: true)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Empties, in the background, the folders of `format`'s other versions in `cacheDirectory`
    /// (its bare name, or its name with another digest): each is emptied by the disk engines
    /// themselves, which open only folders that are stores of theirs.
    static func emptyOtherVersions<Value>(
        of format: Format<Value>, in cacheDirectory: String, keeping current: String, executor: IOExecutor, logger: Logger
    ) {
        let name = CacheDirectory.pathComponent(format.name)
        let currentName = (current as NSString).lastPathComponent
        Task(priority: .background) {
            try? await executor.run {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? []
                for other in names where other != currentName && (other == name || other.hasPrefix(name + "~")) {
                    emptyFolder(cacheDirectory + "/" + other, format: format.name, logger: logger)
                }
            }
        }
    }

    private static func emptyFolder(_ folder: String, format: String, logger: Logger) {
        for engine in diskEngines {
            do {
                guard let store = try engine.openForTrimming(inFolder: folder, size: 0, logger: logger) else { continue }
                try store.trim(toSize: 0)
                try store.flush()
                logger.notice(
                    "Emptied the values of a format's earlier settings",
                    metadata: ["format": "\(format)", "folder": "\(folder)"]
                )
            } catch {
                logger.warning(
                    "Could not empty the values of a format's earlier settings",
                    metadata: ["format": "\(format)", "folder": "\(folder)", "error": "\(error)"]
                )
            }
        }
    }
}
