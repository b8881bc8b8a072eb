// SwapBackendsInTests: the production wiring of GreetingService (a real FileStore). Its tests, in
// Tests/, run the same service on HanekeTesting's doubles.
//
//   swift run SwapBackendsInTests      swift test --filter SwapBackendsInTestsTests

import Foundation
import Haneke

// A folder of this run's own (a fixed name in the shared temporary folder could be someone else's).
let folder = NSTemporaryDirectory() + "haneke-greetings-\(UUID().uuidString.prefix(8))"
defer { try? FileManager.default.removeItem(atPath: folder) }
let service = GreetingService(disk: try FileStore(directory: folder, capacity: 1 << 20)) { name in
    try await Task.sleep(for: .milliseconds(20))
    return "Hello, \(name)!"
}
for name in ["Ada", "Grace", "Ada"] {
    print(try await service.greeting(for: name))
}
try await service.forget("Ada")
try await service.forget("Grace")
