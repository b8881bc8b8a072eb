package import Foundation
package import HanekeProtocols
package import Logging

extension FileStore: DiskEngine {
    /// The store's files are the folder itself: the tool names them by the folder.
    package static var partName: String? { nil }

    package static func storedValue(forKey key: String, inFolder folder: String) throws -> Data? {
        try payload(forKey: key, inDirectory: folder)
    }

    /// A store without limits, which the tool trims; never `nil` (the folder is the store's).
    package static func openForTrimming(inFolder folder: String, size: Int, logger: Logger) throws -> FileStore? {
        try FileStore(directory: folder, configuration: .init(capacity: nil, countLimit: nil), logger: logger)
    }

    /// ``inspect(directory:validatingPayloads:progress:)``, its entries and problems in the shared
    /// shape; never `nil` (the folder is the store's). The payload check reads every file whole,
    /// and the entries it judges damaged once it has seen them all become problems
    /// (``Inspection/markDamaged(_:)``).
    package static func inspect(
        folder: String,
        checkingPayloads payloadCheck: DiskInspection.PayloadCheck?,
        progress: (DiskInspection.Progress) -> Void
    ) throws -> DiskInspection? {
        progress(.started)
        // The walk calls `progress` only while it runs.
        var inspection = try withoutActuallyEscaping(progress) { progress in
            try inspect(
                directory: folder,
                validatingPayloads: payloadCheck.map { payloadCheck in { payloadCheck.check(DiskInspection.Entry($0), $1) } },
                progress: { examined, total in progress(.examined(examined, of: total)) }
            )
        }
        if let payloadCheck { inspection.markDamaged(payloadCheck.damageFoundAtTheEnd()) }
        return DiskInspection(
            partName: partName, jsonKey: "files", filesDescription: "entry files", itemName: "file", folder: folder, path: folder,
            entries: inspection.entries.map(DiskInspection.Entry.init), problems: inspection.problems.map(DiskInspection.Problem.init),
            examined: inspection.filesExamined, metadataSize: inspection.metadataSize, foldersSize: inspection.foldersSize,
            engineInspection: inspection
        )
    }

    /// ``repair(_:removingForeignFiles:)`` of the inspection's problems; `nil` when there are none.
    package static func repair(_ inspection: DiskInspection, removingForeignFiles: Bool) throws -> DiskInspection.Repair? {
        guard let files = inspection.engineInspection as? Inspection, !files.problems.isEmpty else { return nil }
        let outcome = try repair(files.problems, removingForeignFiles: removingForeignFiles)
        return DiskInspection.Repair(
            removed: outcome.removed.map(DiskInspection.Problem.init),
            kept: outcome.kept.map { DiskInspection.Repair.Kept(problem: DiskInspection.Problem($0.problem), reason: $0.reason) },
            removedFiles: false
        )
    }

    /// The entry files, the marker and the journal: what ``trim(toSize:)`` fits within its size.
    package var trimmedSize: Int { totalSize + metadataSize }

    /// The entry files, the marker and the journal.
    package var allocatedSize: Int { totalSize + metadataSize }

    /// When the session before this store's began, by the journal's record of it (read when the
    /// folder was indexed); `nil` when none is recorded or the folder is not indexed yet.
    package var previousSessionStart: Date? {
        lastSessionStart.withLock { $0 }.map(Self.date)
    }

    /// ``entries()``, or ``entriesUsedInLastSession()`` (the journal records which entries the
    /// previous session used; the session's start is not needed).
    package func entriesToPreload(_ selection: PreloadSelection) throws -> [DiskInspection.Entry] {
        switch selection {
        case .all: entries().map(DiskInspection.Entry.init)
        case .usedInLastSession: entriesUsedInLastSession().map(DiskInspection.Entry.init)
        }
    }
}

extension DiskInspection.Entry {
    /// An entry file as the tool shows it.
    init(_ entry: FileStore.Entry) {
        self.init(
            key: entry.key, location: entry.path, payloadSize: entry.payloadSize, storedSize: entry.storedSize,
            allocatedSize: entry.allocatedSize, created: entry.created, expires: entry.expires, lastAccess: entry.lastAccess
        )
    }
}

extension DiskInspection.Problem {
    /// A problem of the folder: its kind is its line's label.
    init(_ problem: FileStore.Problem) {
        self.init(kind: problem.kind.rawValue, label: problem.kind.rawValue, path: problem.path, reason: problem.reason)
    }
}
