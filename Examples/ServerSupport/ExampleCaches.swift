public import Foundation
public import Haneke
public import HanekeServer
public import Images

/// What both server examples keep, made once when the server starts and shared by every request:
/// users as JSON, images in two sizes, and sessions. They all live in one folder, which several
/// worker processes of the server may share: a value one worker wrote, another reads from disk.
/// (Each worker's memory layer is its own: a value changed by one worker can be served as it was
/// from another's memory until it leaves it; values written once, as here, are not affected.)
public struct ExampleCaches: Sendable {
    /// Users as JSON, fetched from ``ExampleCatalog`` on a miss and kept 5 minutes.
    public let users: Cache<JSON>
    /// Images from the images folder, in the formats `small` (128 px) and `large` (512 px).
    public let images: Cache<Image>
    /// Sessions, kept until they expire (the disk never evicts them).
    public let sessions: KeyValueCache
    /// The folder the original images are read from.
    public let imageFolder: String

    /// Makes the caches in `folder`.
    /// - Parameters:
    ///   - folder: The caches' folder, shared by the server's worker processes.
    ///   - imageFolder: Where the original images are.
    public init(folder: String, imageFolder: String) {
        var userFormat = Format<JSON>(name: Cache<JSON>.originalFormatName)
        userFormat.timeToLive = .seconds(300)
        users = Cache(name: "users", directory: folder + "/users", originalFormat: userFormat)
        images = Cache(name: "images", directory: folder + "/images", originalFormat: .images(name: Cache<Image>.originalFormatName))
        for (name, side) in [("small", 128), ("large", 512)] {
            images.addFormat(.resizing(name: name, resizer: ImageResizer(size: ImageSize(width: side, height: side))))
        }
        sessions = KeyValueCache(name: "sessions", directory: folder + "/sessions", configuration: .init(eviction: .never))
        self.imageFolder = imageFolder
    }

    /// The user with `id`, from the cache or else the catalog.
    /// - Parameter id: The user's id.
    /// - Returns: The user as JSON bytes.
    /// - Throws: `StoreError` with code `notFound` for an unknown user.
    public func user(_ id: String) async throws -> Data {
        try await users.fetch(key: id) { id in try ExampleCatalog.user(id) }.asData()
    }

    /// The image `name` in the format `size` (`small` or `large`), resized once and kept.
    /// - Parameters:
    ///   - name: A file name in the images folder.
    ///   - size: `small` or `large`.
    /// - Returns: The image.
    /// - Throws: `StoreError`: `invalidKey` for a name that is not a plain file name or an unknown
    ///   size, `notFound` for a missing image.
    public func image(_ name: String, size: String) async throws -> Image {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/") else {
            throw StoreError(.invalidKey, "'\(name)' is not the name of an image")
        }
        guard size == "small" || size == "large" else {
            throw StoreError(.invalidKey, "There is no size '\(size)': ask for small or large")
        }
        return try await images.fetch(path: imageFolder + "/" + name, formatName: size)
    }

    /// A new session for `user`, for 30 minutes.
    /// - Parameter user: The user's id.
    /// - Returns: The session's id.
    /// - Throws: `StoreError` when the cache failed.
    public func startSession(user: String) async throws -> String {
        let id = UUID().uuidString.lowercased()
        guard try await sessions.create(id, value: ExampleSession(user: user), timeToLive: .seconds(1_800)) else {
            throw StoreError(.io, "Session \(id) exists already")
        }
        return id
    }

    /// The session `id`.
    /// - Parameter id: The session's id.
    /// - Returns: The session.
    /// - Throws: `StoreError` with code `notFound` for an unknown or expired session.
    public func session(_ id: String) async throws -> ExampleSession {
        guard let session = try await sessions.get(id, as: ExampleSession.self) else {
            throw StoreError(.notFound, "There is no session \(id)")
        }
        return session
    }

    /// The images folder beside the examples' sources (`Examples/Images`).
    public static let bundledImages = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Images").path
}

/// What a session keeps.
public struct ExampleSession: Codable, Sendable, Equatable {
    /// The signed-in user.
    public var user: String

    /// A session for `user`.
    /// - Parameter user: The user's id.
    public init(user: String) {
        self.user = user
    }
}

/// The examples' stand-in for a database: users 1 to 100.
public enum ExampleCatalog {
    /// The user with `id`.
    /// - Parameter id: The user's id.
    /// - Returns: The user.
    /// - Throws: `StoreError` with code `notFound` for any other id.
    public static func user(_ id: String) throws -> JSON {
        guard let number = Int(id), (1...100).contains(number) else {
            throw StoreError(.notFound, "There is no user \(id)")
        }
        return ["id": .number(Double(number)), "name": .string("User \(number)")]
    }
}
