// A worker process of a server for the coherence tests: it keeps sessions in a KeyValueCache on a
// folder that the test process uses too, and answers one command a line on stdin:
//
//   HanekeSessionWorker DIR          prints "ready", then for each line:
//     set KEY USER SECONDS           stores the session {"user": USER} for SECONDS; prints "ok"
//     get KEY                        prints the session's USER, or "nil"
//     remove KEY                     removes it; prints "ok"
//
// and prints "failed <error>" for a command that throws. It ends at the end of its input.

import Foundation
import HanekeServer

struct Session: Codable, Sendable {
    var user: String
}

func line(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: HanekeSessionWorker DIR\n".utf8))
    exit(2)
}
let sessions = KeyValueCache(name: "sessions", directory: CommandLine.arguments[1], configuration: .init(eviction: .never))
line("ready")
while let command = readLine() {
    let words = command.split(separator: " ").map(String.init)
    do {
        switch (words.first, words.count) {
        case ("set", 4):
            try await sessions.set(words[1], to: Session(user: words[2]), timeToLive: .seconds(Int(words[3]) ?? 60))
            line("ok")
        case ("get", 2):
            line(try await sessions.get(words[1], as: Session.self)?.user ?? "nil")
        case ("remove", 2):
            try await sessions.remove(words[1])
            line("ok")
        default:
            line("failed unknown command: \(command)")
        }
    } catch {
        line("failed \(error)")
    }
}
try await sessions.shutdown()
