// SwapBackendsInTests: the production wiring of GreetingService (a real FileStore). Its tests, in
// Tests/, run the same service on HanekeTesting's doubles.
//
//   swift run SwapBackendsInTests      swift test --filter SwapBackendsInTestsTests

import Foundation
import Haneke

let folder = NSTemporaryDirectory() + "haneke-greetings"
let service = GreetingService(disk: try FileStore(directory: folder, capacity: 1 << 20)) { name in
    try await Task.sleep(for: .milliseconds(20))
    return "Hello, \(name)!"
}
for name in ["Ada", "Grace", "Ada"] {
    print(try await service.greeting(for: name))
}
try await service.forget("Ada")
try await service.forget("Grace")
