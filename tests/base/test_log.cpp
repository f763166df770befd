// The JSON log line format (base/log_format.hpp): fields, escaping, the request id lifted out.
#include "catch.hpp"

#include "base/log_format.hpp"

using vks::log::json_line;

TEST_CASE("json_line: one object with ts, level, msg, thread") {
  // 2026-11-27T11:05:28.460Z
  CHECK(json_line("info", 1795777528460, 42, "model ready") ==
        R"({"ts":"2026-11-27T11:05:28.460Z","level":"info","msg":"model ready","thread":42})");
}

TEST_CASE("json_line: escapes quotes, backslashes and control bytes; UTF-8 passes") {
  CHECK(json_line("warning", 0, 1, "a\"b\\c\nd\te\x01 é") ==
        R"({"ts":"1970-01-01T00:00:00.000Z","level":"warning","msg":"a\"b\\c\nd\te\u0001 é","thread":1})");
}

TEST_CASE("json_line: a req=<id> prefix becomes request_id") {
  CHECK(json_line("warning", 0, 7, "req=chatcmpl-abc failed with 503: device lost") ==
        R"({"ts":"1970-01-01T00:00:00.000Z","level":"warning","request_id":"chatcmpl-abc","msg":"failed with 503: device lost","thread":7})");
  CHECK(json_line("debug", 0, 7, "req=x\"y") ==
        R"({"ts":"1970-01-01T00:00:00.000Z","level":"debug","request_id":"x\"y","msg":"","thread":7})");
  CHECK(json_line("info", 0, 7, "requests: 3") ==
        R"({"ts":"1970-01-01T00:00:00.000Z","level":"info","msg":"requests: 3","thread":7})");
}
