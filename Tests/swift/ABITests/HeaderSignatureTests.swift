import CContentCardsABI
import ContentCardsC
import Foundation
import Testing

/// The handwritten header and the @_cdecl implementations kept in step (docs/C-API.md, "Names").
///
/// Each line assigns the header's function to a variable of the implementation's type and the
/// other way round, so this file does not build if a declaration in include/contentcards.h and
/// its Swift implementation differ in any parameter or result type (nullability included).
/// The second test fails when the header declares a function this file does not check.
@Suite struct HeaderSignatureTests {
    static let checked: Set<String> = [
        "cc_abi_version",
        "cc_config_append_string",
        "cc_config_close",
        "cc_config_json",
        "cc_config_new",
        "cc_config_set_bool",
        "cc_config_set_number",
        "cc_config_set_string",
        "cc_controller_apply",
        "cc_controller_card",
        "cc_controller_change_user",
        "cc_controller_close",
        "cc_controller_counts",
        "cc_controller_total_count",
        "cc_controller_unviewed_count",
        "cc_controller_unread_count",
        "cc_controller_all_counts",
        "cc_controller_mark_read",
        "cc_controller_mark_all_read",
        "cc_controller_wait_images",
        "cc_token_response_set",
        "cc_token_response_fail",
        "cc_controller_set_token_provider",
        "cc_controller_hint",
        "cc_controller_forget_user",
        "cc_controller_export_user",
        "cc_controller_diagnostics",
        "cc_controller_current_update",
        "cc_controller_feed",
        "cc_controller_feed_indexed",
        "cc_controller_flush_events",
        "cc_controller_log_click",
        "cc_controller_log_dismissal",
        "cc_controller_log_feed_displayed",
        "cc_controller_log_impression",
        "cc_controller_open",
        "cc_controller_pending_events",
        "cc_controller_pending_events_json",
        "cc_set_log_handler",
        "cc_controller_refresh",
        "cc_controller_refresh_async",
        "cc_controller_refresh_in_background",
        "cc_controller_log",
        "cc_controller_set_transport",
        "cc_controller_snapshot",
        "cc_controller_subscribe",
        "cc_controller_unsubscribe",
        "cc_controller_user",
        "cc_last_error_code",
        "cc_last_error_message",
        "cc_last_error_retry_after",
        "cc_snapshot_bool",
        "cc_snapshot_close",
        "cc_snapshot_count",
        "cc_snapshot_double",
        "cc_snapshot_extra",
        "cc_snapshot_extra_at",
        "cc_snapshot_extras_count",
        "cc_snapshot_int",
        "cc_snapshot_string",
        "cc_status_name",
        "cc_string_free",
        "cc_transport_response_fail",
        "cc_transport_response_set",
        "cc_transport_response_set_etag",
        "cc_version",
    ]

    @Test func everyDeclarationMatchesItsImplementation() {
        do { var h = CContentCardsABI.cc_last_error_retry_after; h = ContentCardsC.cc_last_error_retry_after; var i = ContentCardsC.cc_last_error_retry_after; i = CContentCardsABI.cc_last_error_retry_after; _ = (h, i) }
        do { var h = CContentCardsABI.cc_abi_version; h = ContentCardsC.cc_abi_version; var i = ContentCardsC.cc_abi_version; i = CContentCardsABI.cc_abi_version; _ = (h, i) }
        do { var h = CContentCardsABI.cc_config_new; h = ContentCardsC.cc_config_new; var i = ContentCardsC.cc_config_new; i = CContentCardsABI.cc_config_new; _ = (h, i) }
        do { var h = CContentCardsABI.cc_config_set_string; h = ContentCardsC.cc_config_set_string; var i = ContentCardsC.cc_config_set_string; i = CContentCardsABI.cc_config_set_string; _ = (h, i) }
        do { var h = CContentCardsABI.cc_config_set_number; h = ContentCardsC.cc_config_set_number; var i = ContentCardsC.cc_config_set_number; i = CContentCardsABI.cc_config_set_number; _ = (h, i) }
        do { var h = CContentCardsABI.cc_config_set_bool; h = ContentCardsC.cc_config_set_bool; var i = ContentCardsC.cc_config_set_bool; i = CContentCardsABI.cc_config_set_bool; _ = (h, i) }
        do { var h = CContentCardsABI.cc_config_append_string; h = ContentCardsC.cc_config_append_string; var i = ContentCardsC.cc_config_append_string; i = CContentCardsABI.cc_config_append_string; _ = (h, i) }
        do { var h = CContentCardsABI.cc_config_json; h = ContentCardsC.cc_config_json; var i = ContentCardsC.cc_config_json; i = CContentCardsABI.cc_config_json; _ = (h, i) }
        do { var h = CContentCardsABI.cc_config_close; h = ContentCardsC.cc_config_close; var i = ContentCardsC.cc_config_close; i = CContentCardsABI.cc_config_close; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_apply; h = ContentCardsC.cc_controller_apply; var i = ContentCardsC.cc_controller_apply; i = CContentCardsABI.cc_controller_apply; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_card; h = ContentCardsC.cc_controller_card; var i = ContentCardsC.cc_controller_card; i = CContentCardsABI.cc_controller_card; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_change_user; h = ContentCardsC.cc_controller_change_user; var i = ContentCardsC.cc_controller_change_user; i = CContentCardsABI.cc_controller_change_user; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_close; h = ContentCardsC.cc_controller_close; var i = ContentCardsC.cc_controller_close; i = CContentCardsABI.cc_controller_close; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_mark_read; h = ContentCardsC.cc_controller_mark_read; var i = ContentCardsC.cc_controller_mark_read; i = CContentCardsABI.cc_controller_mark_read; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_wait_images; h = ContentCardsC.cc_controller_wait_images; var i = ContentCardsC.cc_controller_wait_images; i = CContentCardsABI.cc_controller_wait_images; _ = (h, i) }
        do { var h = CContentCardsABI.cc_token_response_set; h = ContentCardsC.cc_token_response_set; var i = ContentCardsC.cc_token_response_set; i = CContentCardsABI.cc_token_response_set; _ = (h, i) }
        do { var h = CContentCardsABI.cc_token_response_fail; h = ContentCardsC.cc_token_response_fail; var i = ContentCardsC.cc_token_response_fail; i = CContentCardsABI.cc_token_response_fail; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_set_token_provider; h = ContentCardsC.cc_controller_set_token_provider; var i = ContentCardsC.cc_controller_set_token_provider; i = CContentCardsABI.cc_controller_set_token_provider; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_hint; h = ContentCardsC.cc_controller_hint; var i = ContentCardsC.cc_controller_hint; i = CContentCardsABI.cc_controller_hint; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_forget_user; h = ContentCardsC.cc_controller_forget_user; var i = ContentCardsC.cc_controller_forget_user; i = CContentCardsABI.cc_controller_forget_user; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_export_user; h = ContentCardsC.cc_controller_export_user; var i = ContentCardsC.cc_controller_export_user; i = CContentCardsABI.cc_controller_export_user; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_mark_all_read; h = ContentCardsC.cc_controller_mark_all_read; var i = ContentCardsC.cc_controller_mark_all_read; i = CContentCardsABI.cc_controller_mark_all_read; _ = (h, i) }
        // cc_controller_counts is C over ccint_controller_counts, which adds the unread output.
        do { let f: @convention(c) (UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?, OpaquePointer?, UnsafePointer<CChar>?) -> Int32 = CContentCardsABI.cc_controller_counts; _ = f }
        do { let f: (UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?, OpaquePointer?, UnsafePointer<CChar>?) -> Int32 = ContentCardsC.ccint_controller_counts; _ = f }
        // Written in C (Sources/CContentCardsFast/fast.c, which includes the header, so the C
        // compiler holds them to it); their type is checked here all the same.
        do { let f: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int64 = CContentCardsABI.cc_controller_total_count; _ = f }
        do { let f: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int64 = CContentCardsABI.cc_controller_unviewed_count; _ = f }
        do { let f: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int64 = CContentCardsABI.cc_controller_unread_count; _ = f }
        do { let f: @convention(c) (UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?, UnsafeMutablePointer<Int64>?, OpaquePointer?, UnsafePointer<CChar>?) -> Int32 = CContentCardsABI.cc_controller_all_counts; _ = f }
        do { var h = CContentCardsABI.cc_controller_diagnostics; h = ContentCardsC.cc_controller_diagnostics; var i = ContentCardsC.cc_controller_diagnostics; i = CContentCardsABI.cc_controller_diagnostics; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_current_update; h = ContentCardsC.cc_controller_current_update; var i = ContentCardsC.cc_controller_current_update; i = CContentCardsABI.cc_controller_current_update; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_feed; h = ContentCardsC.cc_controller_feed; var i = ContentCardsC.cc_controller_feed; i = CContentCardsABI.cc_controller_feed; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_feed_indexed; h = ContentCardsC.cc_controller_feed_indexed; var i = ContentCardsC.cc_controller_feed_indexed; i = CContentCardsABI.cc_controller_feed_indexed; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_flush_events; h = ContentCardsC.cc_controller_flush_events; var i = ContentCardsC.cc_controller_flush_events; i = CContentCardsABI.cc_controller_flush_events; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_log_click; h = ContentCardsC.cc_controller_log_click; var i = ContentCardsC.cc_controller_log_click; i = CContentCardsABI.cc_controller_log_click; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_log_dismissal; h = ContentCardsC.cc_controller_log_dismissal; var i = ContentCardsC.cc_controller_log_dismissal; i = CContentCardsABI.cc_controller_log_dismissal; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_log_feed_displayed; h = ContentCardsC.cc_controller_log_feed_displayed; var i = ContentCardsC.cc_controller_log_feed_displayed; i = CContentCardsABI.cc_controller_log_feed_displayed; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_log_impression; h = ContentCardsC.cc_controller_log_impression; var i = ContentCardsC.cc_controller_log_impression; i = CContentCardsABI.cc_controller_log_impression; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_open; h = ContentCardsC.cc_controller_open; var i = ContentCardsC.cc_controller_open; i = CContentCardsABI.cc_controller_open; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_log; h = ContentCardsC.cc_controller_log; var i = ContentCardsC.cc_controller_log; i = CContentCardsABI.cc_controller_log; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_refresh_in_background; h = ContentCardsC.cc_controller_refresh_in_background; var i = ContentCardsC.cc_controller_refresh_in_background; i = CContentCardsABI.cc_controller_refresh_in_background; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_pending_events; h = ContentCardsC.cc_controller_pending_events; var i = ContentCardsC.cc_controller_pending_events; i = CContentCardsABI.cc_controller_pending_events; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_pending_events_json; h = ContentCardsC.cc_controller_pending_events_json; var i = ContentCardsC.cc_controller_pending_events_json; i = CContentCardsABI.cc_controller_pending_events_json; _ = (h, i) }
        do { var h = CContentCardsABI.cc_set_log_handler; h = ContentCardsC.cc_set_log_handler; var i = ContentCardsC.cc_set_log_handler; i = CContentCardsABI.cc_set_log_handler; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_refresh; h = ContentCardsC.cc_controller_refresh; var i = ContentCardsC.cc_controller_refresh; i = CContentCardsABI.cc_controller_refresh; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_refresh_async; h = ContentCardsC.cc_controller_refresh_async; var i = ContentCardsC.cc_controller_refresh_async; i = CContentCardsABI.cc_controller_refresh_async; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_set_transport; h = ContentCardsC.cc_controller_set_transport; var i = ContentCardsC.cc_controller_set_transport; i = CContentCardsABI.cc_controller_set_transport; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_snapshot; h = ContentCardsC.cc_controller_snapshot; var i = ContentCardsC.cc_controller_snapshot; i = CContentCardsABI.cc_controller_snapshot; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_subscribe; h = ContentCardsC.cc_controller_subscribe; var i = ContentCardsC.cc_controller_subscribe; i = CContentCardsABI.cc_controller_subscribe; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_unsubscribe; h = ContentCardsC.cc_controller_unsubscribe; var i = ContentCardsC.cc_controller_unsubscribe; i = CContentCardsABI.cc_controller_unsubscribe; _ = (h, i) }
        do { var h = CContentCardsABI.cc_controller_user; h = ContentCardsC.cc_controller_user; var i = ContentCardsC.cc_controller_user; i = CContentCardsABI.cc_controller_user; _ = (h, i) }
        do { var h = CContentCardsABI.cc_last_error_code; h = ContentCardsC.cc_last_error_code; var i = ContentCardsC.cc_last_error_code; i = CContentCardsABI.cc_last_error_code; _ = (h, i) }
        do { var h = CContentCardsABI.cc_last_error_message; h = ContentCardsC.cc_last_error_message; var i = ContentCardsC.cc_last_error_message; i = CContentCardsABI.cc_last_error_message; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_bool; h = ContentCardsC.cc_snapshot_bool; var i = ContentCardsC.cc_snapshot_bool; i = CContentCardsABI.cc_snapshot_bool; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_close; h = ContentCardsC.cc_snapshot_close; var i = ContentCardsC.cc_snapshot_close; i = CContentCardsABI.cc_snapshot_close; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_count; h = ContentCardsC.cc_snapshot_count; var i = ContentCardsC.cc_snapshot_count; i = CContentCardsABI.cc_snapshot_count; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_double; h = ContentCardsC.cc_snapshot_double; var i = ContentCardsC.cc_snapshot_double; i = CContentCardsABI.cc_snapshot_double; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_extra; h = ContentCardsC.cc_snapshot_extra; var i = ContentCardsC.cc_snapshot_extra; i = CContentCardsABI.cc_snapshot_extra; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_extra_at; h = ContentCardsC.cc_snapshot_extra_at; var i = ContentCardsC.cc_snapshot_extra_at; i = CContentCardsABI.cc_snapshot_extra_at; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_extras_count; h = ContentCardsC.cc_snapshot_extras_count; var i = ContentCardsC.cc_snapshot_extras_count; i = CContentCardsABI.cc_snapshot_extras_count; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_int; h = ContentCardsC.cc_snapshot_int; var i = ContentCardsC.cc_snapshot_int; i = CContentCardsABI.cc_snapshot_int; _ = (h, i) }
        do { var h = CContentCardsABI.cc_snapshot_string; h = ContentCardsC.cc_snapshot_string; var i = ContentCardsC.cc_snapshot_string; i = CContentCardsABI.cc_snapshot_string; _ = (h, i) }
        do { var h = CContentCardsABI.cc_status_name; h = ContentCardsC.cc_status_name; var i = ContentCardsC.cc_status_name; i = CContentCardsABI.cc_status_name; _ = (h, i) }
        do { var h = CContentCardsABI.cc_string_free; h = ContentCardsC.cc_string_free; var i = ContentCardsC.cc_string_free; i = CContentCardsABI.cc_string_free; _ = (h, i) }
        do { var h = CContentCardsABI.cc_transport_response_fail; h = ContentCardsC.cc_transport_response_fail; var i = ContentCardsC.cc_transport_response_fail; i = CContentCardsABI.cc_transport_response_fail; _ = (h, i) }
        do { var h = CContentCardsABI.cc_transport_response_set; h = ContentCardsC.cc_transport_response_set; var i = ContentCardsC.cc_transport_response_set; i = CContentCardsABI.cc_transport_response_set; _ = (h, i) }
        do { var h = CContentCardsABI.cc_transport_response_set_etag; h = ContentCardsC.cc_transport_response_set_etag; var i = ContentCardsC.cc_transport_response_set_etag; i = CContentCardsABI.cc_transport_response_set_etag; _ = (h, i) }
        do { var h = CContentCardsABI.cc_version; h = ContentCardsC.cc_version; var i = ContentCardsC.cc_version; i = CContentCardsABI.cc_version; _ = (h, i) }
    }

    @Test func everyDeclaredFunctionIsChecked() throws {
        // Tests/swift/ABITests/HeaderSignatureTests.swift: four levels up.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let header = try String(contentsOf: root.appendingPathComponent("include/contentcards.h"), encoding: .utf8)
        let regex = try NSRegularExpression(pattern: #"\b(cc_[a-z0-9_]+)\s*\("#)
        let range = NSRange(header.startIndex..., in: header)
        let declared = Set(regex.matches(in: header, range: range).compactMap { Range($0.range(at: 1), in: header).map { String(header[$0]) } })
        #expect(declared == Self.checked, "declared but not checked: \(declared.subtracting(Self.checked)); checked but not declared: \(Self.checked.subtracting(declared))")
    }

    @Test func versionMacrosMatchTheLibrary() {
        #expect(ContentCardsC.cc_abi_version() == CC_ABI_VERSION)
        #expect(String(cString: ContentCardsC.cc_version()!) == CC_VERSION_STRING)
        #expect(CC_VERSION_STRING == "\(CC_VERSION_MAJOR).\(CC_VERSION_MINOR).\(CC_VERSION_PATCH)")
    }
}
