#include "metrics/http_server.h"

#include "common/status_testutil.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace devmgr::metrics {
namespace {

TEST(ParseHostPortTest, Forms) {
  std::string h;
  int p = 0;
  ASSERT_OK(ParseHostPort("127.0.0.1:10265", &h, &p));
  EXPECT_EQ(h, "127.0.0.1");
  EXPECT_EQ(p, 10265);
  ASSERT_OK(ParseHostPort("[::1]:0", &h, &p));
  EXPECT_EQ(h, "::1");
  EXPECT_EQ(p, 0);
  ASSERT_OK(ParseHostPort(":8080", &h, &p));
  EXPECT_EQ(h, "0.0.0.0");
  EXPECT_EQ(ParseHostPort("localhost", &h, &p).message(), "address localhost: missing port");
  EXPECT_EQ(ParseHostPort("a:99999", &h, &p).message(), "address a:99999: invalid port");
  EXPECT_EQ(ParseHostPort("[::1]", &h, &p).message(), "address [::1]: want [host]:port");
}

TEST(HttpServerTest, ServesMetricsOnAnEphemeralPort) {
  int renders = 0;
  HttpServer s([&] { return "m_total " + std::to_string(++renders) + "\n"; });
  auto addr = s.Start("127.0.0.1:0");
  ASSERT_OK(addr);
  const int port = std::stoi(addr->substr(addr->rfind(':') + 1));
  ASSERT_GT(port, 0);
  httplib::Client c("127.0.0.1", port);
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "m_total 1\n");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->body, "ok");
  auto missing = c.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  s.Stop();
  s.Stop();  // idempotent
}

TEST(HttpServerTest, BusyPortIsUnavailable) {
  HttpServer a([] { return std::string(); });
  auto addr = a.Start("127.0.0.1:0");
  ASSERT_OK(addr);
  HttpServer b([] { return std::string(); });
  auto again = b.Start(*addr);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kUnavailable);
}

TEST(HttpServerTest, StopRightAfterStartDoesNotHang) {
  for (int i = 0; i < 5; ++i) {
    HttpServer s([] { return std::string(); });
    ASSERT_OK(s.Start("127.0.0.1:0"));
  }
}

}  // namespace
}  // namespace devmgr::metrics
