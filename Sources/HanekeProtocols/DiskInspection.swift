package import Foundation

/// What a read-only examination of one disk engine's part of a store folder found, in terms every
/// engine shares (``DiskEngine/inspect(folder:checkingPayloads:progress:)``): what `haneke
/// inspect`, `verify` and `stats` print, and what ``DiskEngine/repair(_:removingForeignFiles:)``
/// takes back. Each engine maps its own inspection (`FileStore.Inspection`,
/// `SQLiteStore.Inspection`) to it.
package struct DiskInspection: Sendable {
    /// One valid entry.
    package struct Entry: Sendable, Hashable {
        /// The key.
        package var key: String
        /// Where the entry is: its file, or the file that holds it with others.
        package var location: String
        /// The size of the value, in bytes.
        package var payloadSize: Int
        /// The bytes the entry takes in its file: the whole file for an entry of its own, the key
        /// and the payload for a row among others.
        package var storedSize: Int
        /// The bytes the entry's own file takes on disk (what `du` counts); 0 for an entry that
        /// shares its file with others.
        package var allocatedSize: Int
        /// When the value was written.
        package var created: Date
        /// When the value expires, or `nil` for never.
        package var expires: Date?
        /// When the entry was last read or written, as far as the engine knows, or `nil` when it
        /// does not know.
        package var lastAccess: Date?

        /// An entry.
        /// - Parameters:
        ///   - key: The key.
        ///   - location: Its file, or the file it shares.
        ///   - payloadSize: The size of the value.
        ///   - storedSize: The bytes it takes in its file.
        ///   - allocatedSize: The bytes its own file takes on disk, or 0.
        ///   - created: When it was written.
        ///   - expires: When it expires, or `nil`.
        ///   - lastAccess: When it was last used, or `nil`.
        package init(key: String, location: String, payloadSize: Int, storedSize: Int, allocatedSize: Int, created: Date, expires: Date?, lastAccess: Date?) {
            self.key = key
            self.location = location
            self.payloadSize = payloadSize
            self.storedSize = storedSize
            self.allocatedSize = allocatedSize
            self.created = created
            self.expires = expires
            self.lastAccess = lastAccess
        }
    }

    /// Something wrong in the engine's part of the folder.
    package struct Problem: Sendable, Hashable {
        /// Its kind, as JSON says it (`damaged`, `checksumMismatch`, `structure`, …).
        package var kind: String
        /// How a line of `verify` begins for it (`damaged`, `damaged row`, `damaged database`).
        package var label: String
        /// The path of the offending file or folder.
        package var path: String
        /// The damaged row's id, for an entry among others in one file; `nil` otherwise.
        package var id: Int64?
        /// The damaged row's key, when ``id`` is set.
        package var key: String?
        /// Why it is a problem, in words.
        package var reason: String

        /// A problem.
        /// - Parameters:
        ///   - kind: Its kind, for JSON.
        ///   - label: How its line begins.
        ///   - path: The offending file or folder.
        ///   - id: A damaged row's id, or `nil`.
        ///   - key: A damaged row's key, or `nil`.
        ///   - reason: Why, in words.
        package init(kind: String, label: String, path: String, id: Int64? = nil, key: String? = nil, reason: String) {
            self.kind = kind
            self.label = label
            self.path = path
            self.id = id
            self.key = key
            self.reason = reason
        }
    }

    /// What ``DiskEngine/repair(_:removingForeignFiles:)`` did.
    package struct Repair: Sendable {
        /// A problem a repair left alone, and why.
        package struct Kept: Sendable, Hashable {
            /// The problem.
            package var problem: Problem
            /// Why it was kept.
            package var reason: String

            /// A kept problem.
            /// - Parameters:
            ///   - problem: The problem.
            ///   - reason: Why it was kept.
            package init(problem: Problem, reason: String) {
                self.problem = problem
                self.reason = reason
            }
        }

        /// The problems dealt with: files removed, rows deleted.
        package var removed: [Problem]
        /// The problems left as they are.
        package var kept: [Kept]
        /// Whether the engine's files were removed whole (a database it could not mend).
        package var removedFiles: Bool

        /// A repair's outcome.
        /// - Parameters:
        ///   - removed: The problems dealt with.
        ///   - kept: The problems left, and why.
        ///   - removedFiles: Whether the engine's files were removed whole.
        package init(removed: [Problem], kept: [Kept], removedFiles: Bool) {
            self.removed = removed
            self.kept = kept
            self.removedFiles = removedFiles
        }
    }

    /// How far an examination is, for a progress line.
    package enum Progress: Sendable, Hashable {
        /// The examination begins (the engine has a part in the folder).
        case started
        /// `examined` of `total` items have been read.
        case examined(Int, of: Int)
    }

    /// A check of every payload, for an engine whose examination can read them on its way
    /// (`haneke verify` and `stats` judge LZ4 frames with it). Used on the examining thread.
    package struct PayloadCheck {
        /// Why an entry's payload is damaged, or `nil` (it may be judged only at the end).
        package var check: (Entry, Data) -> String?
        /// Once every payload has been checked: why further entries are damaged, by location.
        package var damageFoundAtTheEnd: () -> [String: String]

        /// A check.
        /// - Parameters:
        ///   - check: Judges one payload.
        ///   - damageFoundAtTheEnd: The entries found damaged once every payload was seen.
        package init(check: @escaping (Entry, Data) -> String?, damageFoundAtTheEnd: @escaping () -> [String: String]) {
            self.check = check
            self.damageFoundAtTheEnd = damageFoundAtTheEnd
        }
    }

    /// How the tool names the engine's part (``DiskEngine/partName``): `nil` for the engine whose
    /// part is the folder itself, whose entries are files of their own; its output is the
    /// folder's, at the top of the JSON. A named part has a section of its own.
    package var partName: String?
    /// The key of a named part's object in `verify --json` and `stats --json` (`database`); its
    /// repair says whether it removed the files as `removed<Key>` (`removedDatabase`).
    package var jsonKey: String
    /// What a named part's files are, as `inspect` and `stats` list them ("database, log and index").
    package var filesDescription: String
    /// What the part's items are called in `verify` ("file", "row": "3 rows checked", `rowsChecked`,
    /// "deleted 1 row", "deleted 2 rows").
    package var itemName: String
    /// The store folder examined.
    package var folder: String
    /// The part's path: the folder, or the file that holds its entries.
    package var path: String
    /// The valid entries, most recently used first.
    package var entries: [Entry]
    /// Everything that is wrong.
    package var problems: [Problem]
    /// The items examined: entry files, or rows.
    package var examined: Int
    /// The bytes the engine's files other than entries' own take on disk: marker and journal, or
    /// database, log and index.
    package var metadataSize: Int
    /// The bytes the folder and its shard folders take on disk (for the engine whose part is the
    /// folder; 0 otherwise).
    package var foldersSize: Int
    /// The engine's own inspection, which its repair takes back.
    package var engineInspection: any Sendable

    /// Every byte the part takes on disk: its entries' files, its other files, its folders.
    package var allocatedSize: Int {
        entries.reduce(0) { $0 + $1.allocatedSize } + metadataSize + foldersSize
    }

    /// An engine's inspection.
    /// - Parameters:
    ///   - partName: The part's name, or `nil` for the folder itself.
    ///   - jsonKey: A named part's key in JSON.
    ///   - filesDescription: What a named part's files are.
    ///   - itemName: What its items are called.
    ///   - folder: The store folder examined.
    ///   - path: The part's path.
    ///   - entries: The valid entries, most recently used first.
    ///   - problems: What is wrong.
    ///   - examined: The items examined.
    ///   - metadataSize: The bytes of its files other than entries' own.
    ///   - foldersSize: The bytes of its folders.
    ///   - engineInspection: The engine's own inspection, for its repair.
    package init(
        partName: String?, jsonKey: String, filesDescription: String, itemName: String, folder: String,
        path: String, entries: [Entry], problems: [Problem], examined: Int, metadataSize: Int, foldersSize: Int,
        engineInspection: any Sendable
    ) {
        self.partName = partName
        self.jsonKey = jsonKey
        self.filesDescription = filesDescription
        self.itemName = itemName
        self.folder = folder
        self.path = path
        self.entries = entries
        self.problems = problems
        self.examined = examined
        self.metadataSize = metadataSize
        self.foldersSize = foldersSize
        self.engineInspection = engineInspection
    }
}
