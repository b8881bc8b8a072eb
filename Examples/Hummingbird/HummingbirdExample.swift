#if Hummingbird
import Foundation
import HanekeHummingbird
import HanekeServiceLifecycle
import Hummingbird
import Images
import Logging
import MemoryStore
import NIOCore
import ServerExampleSupport

/// A Hummingbird server whose routes go through Haneke caches: `GET /users/:id` (JSON from a
/// `Cache`), `GET /images/:name?size=small|large` (an image resized once by `Images` and kept),
/// `POST /sessions?user=ID` and `GET /sessions/:id` (a `KeyValueCache`), `GET /report` (a whole
/// response kept by `ResponseCacheMiddleware` for as long as it says). Errors of the caches
/// become HTTP statuses (`StoreErrorMiddleware`). Start several on one `--folder`, on other ports:
/// they share what is on disk.
@main
struct HummingbirdExample {
    /// The port on 127.0.0.1 (`--port`, 0 for any free port).
    var port = 8080
    /// The caches' folder, which several workers may share (`--folder`).
    var folder = NSTemporaryDirectory() + "haneke-server-example"
    /// Where the original images are (`--images`).
    var images = ExampleCaches.bundledImages

    // The options by hand, not with swift-argument-parser: `swift package generate-manual` runs
    // every executable that depends on it to document it, and built without its trait this one
    // only says how to build it.
    static func main() async throws {
        var example = HummingbirdExample()
        var arguments = CommandLine.arguments.dropFirst()
        while let option = arguments.popFirst() {
            guard let value = arguments.popFirst() else { usage("\(option) needs a value") }
            switch option {
            case "--port":
                guard let port = Int(value) else { usage("--port takes a number, not \(value)") }
                example.port = port
            case "--folder": example.folder = value
            case "--images": example.images = value
            default: usage("unknown option \(option)")
            }
        }
        try await example.run()
    }

    static func usage(_ problem: String) -> Never {
        FileHandle.standardError.write(Data("HummingbirdExample: \(problem)\nusage: HummingbirdExample [--port PORT] [--folder FOLDER] [--images FOLDER]\n".utf8))
        exit(2)
    }

    func run() async throws {
        // Made once, shared by every request.
        let caches = ExampleCaches(folder: folder, imageFolder: images)
        let router = Router()
        router.add(middleware: StoreErrorMiddleware())
        router.get("users/:id") { _, context -> Response in
            let user = try await caches.user(try context.parameters.require("id"))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: user)))
        }
        router.get("images/:name") { request, context -> Response in
            let size = request.uri.queryParameters.get("size") ?? "small"
            let image = try await caches.image(try context.parameters.require("name"), size: size)
            return Response(
                status: .ok, headers: [.contentType: "image/\(image.format)", .cacheControl: "public, max-age=86400"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: image.data))
            )
        }
        router.post("sessions") { request, _ -> String in
            guard let user = request.uri.queryParameters.get("user") else { throw HTTPError(.badRequest, message: "Say which user: ?user=ID") }
            return try await caches.startSession(user: user)
        }
        router.get("sessions/:id") { _, context -> String in
            try await caches.session(try context.parameters.require("id")).user
        }
        // Whole responses, kept as HTTP says (a shared cache's rules): the route runs once a minute
        // at most, and every answer says what the cache did in `Cache-Status`.
        router.group("report")
            .add(middleware: ResponseCacheMiddleware(storage: MemoryStore<String, Data>(costLimit: 16 << 20)))
            .get { _, _ -> Response in
                let page = "report made at \(Date().timeIntervalSince1970)\n"
                return Response(status: .ok, headers: [.cacheControl: "public, max-age=60"], body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
            }
        var logger = Logger(label: "example")
        logger.logLevel = .warning
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            // The journals are written on a graceful shutdown (SIGTERM, SIGINT).
            services: [CacheService(caches.users, caches.images), CacheService(keyValueCaches: [caches.sessions])],
            onServerRunning: { channel in
                // Unbuffered: a script (or a test) waits for this line.
                FileHandle.standardOutput.write(Data("Serving on http://127.0.0.1:\(channel.localAddress?.port ?? port)\n".utf8))
            },
            logger: logger
        )
        try await app.runService()   // until SIGTERM or SIGINT, then a graceful shutdown
    }
}
#else
@main
enum HummingbirdExample {
    static func main() {
        print("Build with the Hummingbird trait: swift run --traits Hummingbird HummingbirdExample")
    }
}
#endif
