import Foundation
import Haneke

/// Examines one disk engine's part of a store folder, read-only, showing progress on a terminal:
/// the folder's own part (the engine without a ``DiskEngine/partName``) as "listing" and its
/// files read, a named part as "checking <part> of <folder>".
/// - Parameters:
///   - engine: One of `diskEngines`.
///   - folder: A store's folder.
///   - judge: Judges the payloads of an engine that reads them; `nil` to read headers only.
///   - progress: The status line.
/// - Returns: What was found, or `nil` when the folder holds none of the engine's files.
func inspect(_ engine: any DiskEngine.Type, in folder: String, judge: PayloadJudge?, progress: ProgressLine) throws -> DiskInspection? {
    defer { progress.end() }
    let verb = judge == nil ? "read" : "checked"
    return try engine.inspect(folder: folder, checkingPayloads: judge?.payloadCheck) { step in
        switch (step, engine.partName) {
        case (.started, nil): progress.show("listing \(shown(folder))…", now: true)
        case (.started, let part?): progress.show("checking \(part) of \(shown(folder))…", now: true)
        case (.examined(let examined, let total), nil): progress.show("\(verb) \(examined) of \(total) files")
        case (.examined(let examined, let total), let part?): progress.show("\(verb) \(examined) of \(total) in \(part)")
        }
    }
}

extension DiskInspection.Problem {
    /// The problem on one line of `verify`, its path escaped (a foreign file's name is anyone's;
    /// the reason shows a key already escaped and cut); a damaged row named by its id in hex and
    /// its key, escaped and cut.
    /// - Parameter itemName: What its part's items are called ("row").
    func line(itemName: String) -> String {
        let row = id.map { id in "\(itemName) \(String(UInt64(bitPattern: id), radix: 16, uppercase: true)) (key \(shownKey(key ?? "", quoted: true))): " } ?? ""
        return "\(label): \(shown(path)): \(row)\(reason)"
    }
}

extension String {
    /// The text with its first letter in upper case, for a JSON key made of words (`removedDatabase`).
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}

/// A JSON object's key made at run time: a named part's key (`database`), or a field named
/// after its items (`rowsChecked`).
struct JSONKey: CodingKey, ExpressibleByStringLiteral {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ string: String) { stringValue = string }
    init(stringLiteral value: String) { stringValue = value }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
