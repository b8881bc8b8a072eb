import HanekeProtocols

/// Copies SQLite's log into the database off the writers' path: a job of the store's executor,
/// on a connection of its own, that a commit asks for once the log holds half its room.
///
/// A checkpoint copies the log's pages into the database file and flushes both (`fsync`); run on
/// the commit that took the log past its threshold, that cost landed on one set in a few hundred
/// and set the writers' tail (a set's p99 about 8× its median). Here the commit only asks
/// (``request()``: one lock) and returns; the job runs a passive checkpoint beside the writers,
/// and starts the log over once it holds three quarters of its room (see
/// `Database.copyLog(restartingFrom:)`). A commit still runs a blocking checkpoint itself once
/// the log holds all of its room — the job fell that far behind, or could not run — so the bound
/// holds whatever the executor does.
///
/// Concurrency: ``control`` (whether a job is queued or running, whether the store closed) is
/// taken by writers for an instant, with the store's state lock held; ``connection`` is held by
/// the job for its whole checkpoint and by ``close()`` and ``closeConnection()``. The order is
/// the store's state, then ``connection``, then ``control``; the job never takes the store's
/// lock, so a writer never waits for a checkpoint to take its own.
final class Checkpointer: Sendable {
    /// Whether a job is queued or running, whether the store closed, and how many jobs ran.
    private struct Control: Sendable {
        var scheduled = false
        var closed = false
        var runs = 0
    }

    private let control = Locked(Control())
    /// The job's connection, opened by the first job that runs, and again after
    /// ``closeConnection()``; `nil` until then.
    private let connection = Locked<Database?>(nil)
    private let executor: IOExecutor
    /// Opens the job's connection to the store's database.
    private let open: @Sendable () throws -> Database

    /// Creates a checkpointer whose jobs run on `executor`, on a connection `open` makes.
    /// - Parameters:
    ///   - executor: Where the jobs run: the store's executor, never Swift's cooperative pool.
    ///   - open: Opens a connection to the store's database (on the executor, by the first job).
    init(executor: IOExecutor, open: @escaping @Sendable () throws -> Database) {
        self.executor = executor
        self.open = open
    }

    /// How many jobs ran to their end (tests).
    var runs: Int { control.withLock { $0.runs } }

    /// Asks for a checkpoint: submits a job unless one is queued or running (a commit past the
    /// threshold during a job asks again at its next commit). Returns at once.
    func request() {
        let submit = control.withLock { control -> Bool in
            guard !control.scheduled, !control.closed else { return false }
            control.scheduled = true
            return true
        }
        guard submit else { return }
        executor.submit { [self] in run() }
    }

    /// The job: opens the connection when there is none (a failure — another process keeps the
    /// database locked — is left to the next request; the commits bound the log meanwhile), then
    /// copies the log, and starts it over when it holds three quarters of its room.
    private func run() {
        connection.withLock { connection in
            guard !control.withLock({ $0.closed }) else { return }
            if connection == nil { connection = try? open() }
            guard let database = connection else { return }
            database.copyLog(restartingFrom: database.restartFrames)
        }
        control.withLock { control in
            control.scheduled = false
            control.runs += 1
        }
    }

    /// Closes the job's connection, waiting for a job running on it to finish; the next job opens
    /// another. Called before the store's own connection closes on a database replaced behind its
    /// back, so that the store's is the last connection to the old files.
    func closeConnection() {
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }

    /// Closes the job's connection for good, waiting for a job running on it to finish: later
    /// requests, and jobs queued already, do nothing. Called before the store's connection closes,
    /// so that the store's is the last connection (the one that copies the log into the database
    /// and deletes it).
    func close() {
        connection.withLock { connection in
            control.withLock { $0.closed = true }
            connection?.close()
            connection = nil
        }
    }
}
