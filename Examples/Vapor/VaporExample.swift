#if Vapor
import Foundation
import HanekeVapor
import Images
import ServerExampleSupport
import Vapor

/// A Vapor server whose routes go through Haneke caches: `GET /users/:id` (JSON from a `Cache`),
/// `GET /images/:name?size=small|large` (an image resized once by `Images` and kept),
/// `POST /sessions?user=ID` and `GET /sessions/:id` (sessions in the application's cache,
/// `.haneke`). Errors of the caches become HTTP statuses (`StoreErrorMiddleware`). Run it as
/// `VaporExample serve --port 8081`; the caches' folder is `$HANEKE_EXAMPLE_FOLDER`, which several
/// workers may share.
@main
enum VaporExample {
    static func main() async throws {
        var environment = try Environment.detect()
        try LoggingSystem.bootstrap(from: &environment)
        let app = try await Application.make(environment)
        app.logger.logLevel = .notice
        app.http.server.configuration.hostname = "127.0.0.1"
        let folder = Environment.get("HANEKE_EXAMPLE_FOLDER") ?? NSTemporaryDirectory() + "haneke-server-example"
        let caches = ExampleCaches(folder: folder, imageFolder: Environment.get("HANEKE_EXAMPLE_IMAGES") ?? ExampleCaches.bundledImages)
        // The application's cache is the sessions' cache: `request.cache` reaches it, and its
        // journals are written when the application shuts down.
        app.caches.use(.haneke(caches.sessions))
        app.middleware.use(StoreErrorMiddleware())
        app.get("users", ":id") { request async throws -> Response in
            let user = try await caches.user(try request.parameters.require("id"))
            return Response(status: .ok, headers: ["Content-Type": "application/json"], body: .init(data: user))
        }
        app.get("images", ":name") { request async throws -> Response in
            let image = try await caches.image(try request.parameters.require("name"), size: request.query["size"] ?? "small")
            return Response(
                status: .ok, headers: ["Content-Type": "image/\(image.format)", "Cache-Control": "public, max-age=86400"],
                body: .init(data: image.data)
            )
        }
        app.post("sessions") { request async throws -> String in
            guard let user: String = request.query["user"] else { throw Abort(.badRequest, reason: "Say which user: ?user=ID") }
            let id = UUID().uuidString.lowercased()
            try await request.cache.set(id, to: ExampleSession(user: user), expiresIn: .minutes(30))
            return id
        }
        app.get("sessions", ":id") { request async throws -> String in
            guard let session = try await request.cache.get(try request.parameters.require("id"), as: ExampleSession.self) else {
                throw Abort(.notFound, reason: "There is no such session")
            }
            return session.user
        }
        do {
            try await app.execute()
        } catch {
            try await app.asyncShutdown()
            throw error
        }
        try await app.asyncShutdown()
    }
}
#else
@main
enum VaporExample {
    static func main() {
        print("Build with the Vapor trait: swift run --traits Vapor VaporExample serve")
    }
}
#endif
