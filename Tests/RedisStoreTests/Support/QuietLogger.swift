import Logging

extension Logger {
    /// A logger for tests that provoke failures on purpose: only critical messages, so that the
    /// warnings they expect do not bury the output of the tests that fail.
    static let quiet: Logger = {
        var logger = Logger(label: "haneke.test.quiet")
        logger.logLevel = .critical
        return logger
    }()
}
