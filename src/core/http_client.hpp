// HTTP for the Prometheus API, over libcurl: one keep-alive handle per connection (a join must
// not open a connection per row), the auth and TLS settings, a response-size cap, and retries
// with backoff on 429, 5xx and connection errors (honouring Retry-After).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "core/text.hpp"
#include "core/sqlite_api.hpp"

namespace pp {

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string content_type;
  std::string location;  // of a redirect, which is not followed
  int attempts = 0;
  // The credentials the request carried, as sent and as encoded (hide_secrets): a server or
  // proxy may echo them in what an error message quotes.
  std::vector<std::string> secrets;
};

// Whether a URL names this machine's loopback interface (localhost, 127.0.0.0/8, [::1]): where
// http_compression 'auto' asks for no compression.
bool names_loopback(const std::string& url);

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // GET url, or POST form_body (application/x-www-form-urlencoded) when it is non-empty.
  // Transport failures and exhausted retries throw pp::Error; any HTTP status
  // is returned for the caller to interpret. Messages name the URL without credentials.
  HttpResponse send(const std::string& url, const std::string& form_body, const Settings& settings);

  // Requests stop with pp::InterruptedError once sqlite3_interrupt() is called on db (checked
  // while a response is awaited, about every 50 ms to a second, and while a retry waits).
  // send() must then run on the thread that called into SQLite, as every caller does.
  void watch_interrupts(sqlite3* db) { interrupt_db_ = db; }

  // URL-encodes one form or query value.
  std::string escape(const std::string& value);

  // Requests sent on the wire (retries included) and response bytes received (after
  // decompression), for pp_http_stats(), benchmarks and tests.
  long requests_sent() const { return requests_sent_; }
  long long bytes_received() const { return bytes_received_; }

 private:
  struct Handle;
  std::unique_ptr<Handle> handle_;
  std::mutex mutex_;
  sqlite3* interrupt_db_ = nullptr;
  long requests_sent_ = 0;
  long long bytes_received_ = 0;
};

}  // namespace pp
