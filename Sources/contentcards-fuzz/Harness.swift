// Fuzz targets for the C ABI. Each feeds arbitrary bytes to the @_cdecl entry points, the very
// code C and Python callers reach; a failure is a crash, a sanitizer report, a hang (libFuzzer's
// -timeout) or a finding of the harness's oracles (finding(): it aborts, so libFuzzer keeps the
// input as it does on a crash).
//
//   make fuzz            an optimized build with -sanitize=fuzzer,address; each target briefly
//                        (FUZZ_SECONDS; CI: 10)
//   make stress          each target for STRESS_FUZZ_SECONDS
//   make fuzz-campaign   each target for FUZZ_RUNS inputs (10 million) at nice 19, then the
//                        grown corpus merged into fuzz/corpus (a machine's background job)
//   make fuzz-replay     fuzz/corpus replayed through the ordinary build (a regression test)
//
// CC_FUZZ_TARGET picks the target (docs/RELIABILITY.md, section 1): payload, config, filter,
// calls (Calls.swift: a grammar of calls with callbacks and an in-memory host transport) or
// decoders (the payload decoder's stream path against its parsed-value path, and the stored
// form's round trip). Built without CC_FUZZ (the ordinary build), the same harness replays
// the files given on the command line, so fuzz/corpus runs as a regression test without
// libFuzzer.
//
// Speed (libFuzzer's in-process loop calls the target millions of times): nothing is set up per
// input that can be set up once. The controllers of payload and filter are opened once per
// process (in memory) and brought back to the same state after each input; the image
// controller of calls (a file store: images need one) too; the sample feed is read once; the
// scratch directory is made once, in /dev/shm when there is one. Only config opens a controller
// per input (opening is what it fuzzes); calls keeps its in-memory controller for the next input
// when it can be brought back to a new one's state (CallsControllers.swift, CallsController).
import CContentCardsABI
import ContentCardsC
@testable import ContentCards
#if canImport(Glibc)
import Glibc
#endif

enum Target: String, CaseIterable {
    case payload, config, filter, calls, decoders
}

let target: Target = {
    guard let raw = getenv("CC_FUZZ_TARGET").map({ String(cString: $0) }), let t = Target(rawValue: raw) else {
        return .payload
    }
    return t
}()

/// Absolute: the harness works in a scratch directory.
let sampleFeed: String = {
    if let path = getenv("CC_SAMPLE_FEED") { return String(cString: path) }
    var buffer = [CChar](repeating: 0, count: 4096)
    let cwd = getcwd(&buffer, buffer.count).map { String(cString: $0) } ?? "."
    return cwd + "/examples/data/sample_feed.json"
}()

/// A finding of the fuzz oracles below: the harness (an executable of its own, never part of
/// the library a host loads) stops so that libFuzzer keeps the input, as it does on a crash.
func finding(_ message: String) -> Never {
    fputs("contentcards-fuzz: \(message)\n", stderr)
    abort()
}

/// The bytes of the file at `path` (a replayed input, the sample feed), or nil when it cannot
/// be opened.
func readFile(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buffer, 1, buffer.count, f)
        if n <= 0 { break }
        bytes += buffer[0..<n]
    }
    return bytes
}

/// The working directory the harness started in. libFuzzer reads and writes by the paths it was
/// given (the corpus, artifacts, -merge's control file), relative ones too, between inputs: each
/// input runs in the scratch directory and the harness comes back here after it. (Staying in
/// the scratch directory made libFuzzer find none of a relative corpus's files, silently.)
let startDirectory = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)

func runOne(_ data: UnsafeRawBufferPointer) {
    let home = startDirectory   // first: a global is made at its first use, here before any chdir
    _ = scratch
    if !scratchPath.isEmpty { chdir(scratchPath) }
    defer { if home >= 0 { fchdir(home) } }
    switch target {
    case .payload: runPayload(data)
    case .config: runConfig(data)
    case .filter: runFilter(data)
    case .calls: runCalls(data)
    case .decoders: runDecoders(data)
    }
}

/// The scratch directory the harness works in (relative storage paths of `config` and the
/// image store of `calls` land here, never in the working directory): in /dev/shm when there
/// is one (SQLite files in memory), removed at exit.
var scratchPath = ""
let scratch: Void = {
    if target == .filter { _ = sampleFeedText }   // read before leaving the working directory
    let parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    var template = Array("\(parent)/cc-fuzz-XXXXXX".utf8CString)
    template.withUnsafeMutableBufferPointer { buf in
        if let base = buf.baseAddress, let dir = mkdtemp(base) {
            scratchPath = String(cString: dir)
        }
    }
    atexit { if !scratchPath.isEmpty { removeTree(scratchPath) } }
}()

/// Empties the scratch directory (what `config` inputs created in it).
func emptyScratch() {
    guard !scratchPath.isEmpty else { return }
    removeTree(scratchPath)
    mkdir(scratchPath, 0o700)
    chdir(scratchPath)
}

/// Removes a directory and everything in it (no symbolic link is followed).
func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR, let dir = opendir(path) {
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(dir)
        for name in names { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    runOne(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

#if CC_FUZZ
/// libFuzzer's driver, called from our main (SwiftPM links executables with their own main).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@main
struct Fuzz {
    static func main() {
        // calls: no leak check after each input (-detect_leaks=0 unless asked for), only
        // LeakSanitizer's at exit. An input of calls ends while the library's threads still
        // run host callbacks or wait for work; a live thread whose reused id the sanitizer's
        // registry matched to an ended thread ("Thread N not found in registry") was not
        // scanned, and what only it held was reported as leaked (docs/RELIABILITY.md).
        var arguments = CommandLine.arguments
        if target == .calls && !arguments.contains(where: { $0.hasPrefix("-detect_leaks=") }) {
            arguments.append("-detect_leaks=0")
        }
        var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var argc = Int32(arguments.count)
        cStrings.withUnsafeMutableBufferPointer { buffer in
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
            exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
        }
    }
}
#else
/// Without libFuzzer: replay the files given as arguments (the corpus as a regression test).
@main
struct Replay {
    static func main() {
        // Read every file first (the inputs run in the scratch directory).
        var inputs: [[UInt8]] = []
        for path in CommandLine.arguments.dropFirst() {
            guard let bytes = readFile(path) else {
                fputs("cannot open \(path)\n", stderr)
                exit(2)
            }
            inputs.append(bytes)
        }
        for input in inputs { input.withUnsafeBytes { runOne($0) } }
        let count = inputs.count
        print("replayed \(count) inputs for target \(target.rawValue): 0 crashes")
        for c in [payloadController, filterController, imageController] where c != nil { _ = cc_controller_close(c) }
    }
}
#endif
