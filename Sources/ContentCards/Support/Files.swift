#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The few file operations the library needs, on the C library directly (no Foundation).
public enum Files {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    static func describeErrno(_ code: Int32) -> String {
        guard let s = strerror(code) else { return "errno \(code)" }
        return String(cString: s)
    }

    /// Reads a whole file, refusing one larger than `limit` bytes.
    public static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(message: "cannot open \(path): \(describeErrno(errno))") }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(message: "cannot read \(path): \(describeErrno(errno))")
            }
            if n == 0 { break }
            if result.count + n > limit {
                throw Failure(message: "\(path) is larger than the limit of \(limit) bytes")
            }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    /// Appends `bytes` and fsyncs, creating the file 0600 if needed.
    public static func append(_ path: String, _ bytes: [UInt8]) throws(Failure) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(message: "cannot open \(path): \(describeErrno(errno))") }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in raw.baseAddress.map { write(fd, $0 + offset, raw.count - offset) } ?? 0 }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(message: "cannot write \(path): \(describeErrno(errno))")
            }
            offset += n
        }
        fsync(fd)
    }

    /// Creates `path` with mode 0600 if it does not exist (an existing file is left as it is).
    public static func createPrivateFile(_ path: String) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
    }

    /// Creates `path` (and missing parents) as directories with mode 0700.
    public static func makeDirectory(_ path: String) throws(Failure) {
        var built = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            built += (built.isEmpty || built.hasSuffix("/") ? "" : "/") + part
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw Failure(message: "cannot create directory \(built): \(describeErrno(errno))")
            }
        }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw Failure(message: "\(path) is not a directory")
        }
    }
}
