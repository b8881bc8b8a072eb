import ArgumentParser

/// `haneke`: the framework's main job made visible, and tools for cache folders.
@main
struct HanekeCommand: AsyncParsableCommand {
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
