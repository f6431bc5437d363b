// contentcards-tool: small jobs on the Swift core, used by the tests as a separate process
// and by people to poke at a feed.
//
//   contentcards-tool feed CONFIG_JSON            refresh, print the feed by class type
//   contentcards-tool stages PAYLOAD FILTER N     time each stage of the feed pipeline (decode,
//                                                 merge + persist, filter + order, encode), the
//                                                 median of N runs after one not counted, as
//                                                 JSON (for make bench); decode also in CPU
//                                                 time, every thread's
//   contentcards-tool decode PAYLOAD N            the decode stage alone, N times (a loop to
//                                                 profile), its median time and CPU time
//   contentcards-tool log-loop CONFIG_JSON N [T]  refresh once, then log N events from each of
//                                                 T threads (1), printing "logged <event-id>"
//                                                 after each call returns (the crash test kills
//                                                 it at random points; with T > 1 the calls
//                                                 share transactions: group commit)
//   contentcards-tool fork-calls CONFIG_JSON N [T]
//                                                 T threads (4) log, refresh, apply and read
//                                                 without pause while another forks N times;
//                                                 each child calls every entry point of the
//                                                 inherited controller, which must refuse at
//                                                 once (ForkCalls.swift); prints "forks N: ok"
//   contentcards-tool store-modes CONFIG_JSON      refresh and log once, then print each file of
//                                                 the storage directory, and the directory, with
//                                                 its mode in octal, while the store is open (the
//                                                 test of the modes runs it under umask 0: a
//                                                 process's umask is its every thread's)
import ContentCards
import ContentCardsC
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    fputs("contentcards-tool: \(message)\n", stderr)
    exit(1)
}

func say(_ line: String) {
    fputs(line + "\n", stdout)
    fflush(stdout)
}

/// Runs `body(0..<count)` on `count` threads at once and waits for them.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Job { let body: @Sendable (Int) -> Void; let index: Int; init(_ b: @escaping @Sendable (Int) -> Void, _ i: Int) { body = b; index = i } }
    var threads: [pthread_t] = []
    for t in 0..<count {
        var thread = pthread_t()
        let job = Unmanaged.passRetained(Job(body, t)).toOpaque()
        guard pthread_create(&thread, nil, { p in
            let job = Unmanaged<Job>.fromOpaque(p!).takeRetainedValue()
            job.body(job.index)
            return nil
        }, job) == 0 else { fail("cannot start a thread") }
        threads.append(thread)
    }
    for t in threads { pthread_join(t, nil) }
}

let args = CommandLine.arguments

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = monotonicSeconds()
    try body()
    return (monotonicSeconds() - start) * 1000
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

/// The CPU time of every thread of the process, in milliseconds: a large payload is decoded
/// by two threads, and its time alone would hide the second's work.
func cpuMilliseconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
    return Double(t.tv_sec) * 1000 + Double(t.tv_nsec) / 1e6
}

// The decode stage alone, N times (a loop to profile: `perf record` over it sees nothing else).
if args.count >= 4 && args[1] == "decode" {
    let bytes: [UInt8]
    do { bytes = try Files.read(args[2], limit: 1 << 30) } catch { fail(error.message) }
    let decoder = PayloadDecoder(limits: .init(maxBytes: 1 << 30))
    var times: [Double] = [], cpu: [Double] = []
    var cards = 0
    for _ in 0..<max(Int(args[3]) ?? 1, 1) {
        do {
            var payload: Payload? = nil
            let before = cpuMilliseconds()
            times.append(try milliseconds { payload = try decoder.decode(bytes) })
            cpu.append(cpuMilliseconds() - before)
            cards = payload?.cards.count ?? 0
        } catch {
            fail("\(error)")
        }
    }
    say(#"{"decode_ms":\#(median(times)),"decode_cpu_ms":\#(median(cpu)),"cards":\#(cards)}"#)
    exit(0)
}

if args.count >= 5 && args[1] == "stages" {
    let bytes: [UInt8]
    do { bytes = try Files.read(args[2], limit: 1 << 30) } catch { fail(error.message) }
    let filter = ClassTypeFilter(args[3].split(separator: ",").map(String.init))
    let repeats = max(Int(args[4]) ?? 5, 1)
    var decode: [Double] = [], decodeCPU: [Double] = [], merge: [Double] = [], select: [Double] = [], encode: [Double] = []
    // One round more than asked, the first not counted: it alone faults in the process's
    // memory, and with three rounds one slow round more made a decode stage longer than the
    // apply it is part of (a CI run read merge + persist 0.0 ms).
    for round in 0...repeats {
        if round == 1 { decode = []; decodeCPU = []; merge = []; select = []; encode = [] }
        do {
            let decoder = PayloadDecoder(limits: .init(maxBytes: 1 << 30))
            // The payload is let go after the clock stops, as simdjson's document is in its
            // baseline: the pipeline never frees a decoded payload (the merge moves its cards
            // into the store), and freeing 10,000 cards is most of a millisecond.
            var decoded: Payload?
            let before = cpuMilliseconds()
            decode.append(try milliseconds { decoded = try decoder.decode(bytes) })
            decodeCPU.append(cpuMilliseconds() - before)
            withExtendedLifetime(decoded) {}
            var config = Configuration()
            config.maxPayloadBytes = 1 << 30
            let c = try ContentCardsController(configuration: config)
            // apply = decode + merge + persist; the decode share is taken off.
            let apply = try milliseconds { try bytes.withUnsafeBufferPointer { _ = try c.apply(bytes: $0) } }
            merge.append(max(apply - (decode.last ?? 0), 0))
            var cards: [Card] = []
            select.append(try milliseconds { cards = try c.cards(filter) })
            encode.append(milliseconds { _ = CardJSON.encode(cards) })
            c.close()
        } catch {
            fail("\(error)")
        }
    }
    say(#"{"decode_ms":\#(median(decode)),"decode_cpu_ms":\#(median(decodeCPU)),"merge_persist_ms":\#(median(merge)),"filter_order_ms":\#(median(select)),"encode_ms":\#(median(encode))}"#)
    exit(0)
}

guard args.count >= 3 else {
    fail("usage: contentcards-tool feed CONFIG_JSON | log-loop CONFIG_JSON N [T] | fork-calls CONFIG_JSON N [T] | store-modes CONFIG_JSON")
}

let controller: ContentCardsController
do { controller = try ContentCardsController(json: args[2]) } catch { fail(error.message) }

switch args[1] {
case "feed":
    do {
        let summary = try controller.refresh()
        say("refreshed: \(ResultJSON.summary(summary))")
        let cards = try controller.cards()
        let groups = Dictionary(grouping: cards, by: \.classType)
        for classType in groups.keys.sorted() {
            say(classType.isEmpty ? "(no class type)" : classType)
            for card in groups[classType] ?? [] { say("  \(card.id)  \(card.type.rawValue)  \(card.title ?? card.cardDescription ?? "")") }
        }
        let counts = try controller.counts()
        say("total \(counts.total), unviewed \(counts.unviewed)")
    } catch {
        fail(error.message)
    }
case "log-loop":
    guard args.count >= 4, let n = Int(args[3]) else { fail("log-loop needs a count") }
    let threads = args.count >= 5 ? max(Int(args[4]) ?? 1, 1) : 1
    do {
        _ = try? controller.refresh()
        let ids = try controller.cards().map(\.id)
        guard !ids.isEmpty else { fail("no cards to log") }
        let loop: @Sendable (Int) -> Void = { t in
            do throws(ContentCardsError) {
                for i in 0..<n {
                    let id = ids[(i + t) % ids.count]
                    let result = i % 3 == 0 ? try controller.logFeedDisplayed() : try controller.logImpression(cardID: id)
                    say("logged \(result.eventID ?? "")")
                }
            } catch {
                fail(error.message)
            }
        }
        if threads == 1 { loop(0) } else { runThreads(threads, loop) }
    } catch {
        fail(error.message)
    }
case "store-modes":
    guard let dir = controller.configuration.storagePath else { fail("store-modes needs a storagePath") }
    do {
        _ = try controller.refresh()
        _ = try controller.logFeedDisplayed()
    } catch {
        fail(error.message)
    }
    var names: [String] = []       // "." is the directory itself
    if let d = opendir(dir) {
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".." { names.append(name) }
        }
        closedir(d)
    }
    for name in names.sorted() {
        var st = stat()
        guard stat(dir + "/" + name, &st) == 0 else { fail("cannot stat \(dir)/\(name)") }
        say("\(name) \(String(st.st_mode & 0o7777, radix: 8))")
    }
#if os(Linux)
case "fork-calls":
    guard args.count >= 4, let forks = Int(args[3]) else { fail("fork-calls needs a count") }
    let threads = args.count >= 5 ? max(Int(args[4]) ?? 4, 2) : 4
    forkCalls(controller, forks: forks, threads: threads)
#endif
default:
    fail("unknown command \(args[1])")
}
controller.close()
