#include "core/http_client.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/settings.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

std::once_flag curl_initialized;

struct CurlList {
  curl_slist* list = nullptr;
  ~CurlList() { curl_slist_free_all(list); }
  void add(const std::string& line) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (!next) throw std::bad_alloc();
    list = next;
  }
};

struct Transfer {
  std::string* body = nullptr;
  size_t limit = 0;
  bool too_large = false;
  double retry_after_seconds = -1;
  std::string content_type;
  std::string location;
};

size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (transfer->body->size() + n > transfer->limit) {
    transfer->too_large = true;
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  transfer->body->append(data, n);
  return n;
}

size_t read_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  const auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    const std::string name = to_lower(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    double seconds = 0;
    if (name == "retry-after" && parse_double(value, seconds) && seconds >= 0)
      transfer->retry_after_seconds = seconds;
    if (name == "content-type") transfer->content_type = std::string(value);
    if (name == "location") transfer->location = std::string(value);
  }
  return size * count;
}

// The secret in the file named by a setting: its first line, without the line break and
// surrounding blanks. The file must be a regular file (a directory or FIFO is refused, never
// waited on), at most kMaxSecretFileBytes long, with nothing but blank lines after the secret,
// and the secret must hold no control character (a line break would inject request headers).
// Messages name the setting and the path, never the content.
constexpr size_t kMaxSecretFileBytes = 64 * 1024;

std::string read_secret_file(const std::string& path, const char* setting, bool spaces_allowed) {
  // What does not look like a path may be the secret itself, pasted where its file's path
  // belongs: never shown.
  const std::string shown = looks_like_a_path(path)
                                ? "'" + path + "'"
                                : "a name that looks like no path (not shown, since it may be the secret itself)";
  const std::string where = std::string("setting '") + setting + "' names " + shown;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw Error("cannot read the file named by setting '" + std::string(setting) + "': " + shown);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(where + ", which is not a regular file; it needs a file holding the secret alone");
  if (static_cast<unsigned long long>(st.st_size) > kMaxSecretFileBytes)
    throw Error(where + ", which is larger than " + std::to_string(kMaxSecretFileBytes / 1024) +
                " KiB; it needs a file holding the secret alone");
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read the file named by setting '" + std::string(setting) + "': " + shown);
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > kMaxSecretFileBytes)
      throw Error(where + ", which is larger than " + std::to_string(kMaxSecretFileBytes / 1024) + " KiB");
  }
  const auto line_end = content.find('\n');
  const std::string secret(trim(std::string_view(content).substr(0, line_end)));
  if (line_end != std::string::npos && !trim(std::string_view(content).substr(line_end)).empty())
    throw Error(where + ", which holds more than one line; it needs a file holding the secret alone");
  if (secret.empty()) throw Error(where + ", which is empty");
  for (unsigned char c : secret)
    if (c < 0x20 || c == 0x7f || (!spaces_allowed && c == ' '))
      throw Error(where + ", whose secret holds a " + (c == ' ' ? "space" : "control character") +
                  "; a secret is one line of printable characters");
  return secret;
}

// Whether an answer is worth asking for again: 429 and 5xx are, except a server's query timeout
// (Prometheus' 503 with errorType "timeout"), which spent the server's whole time limit on the
// query and would spend it again on each attempt.
bool retryable(const HttpResponse& response) {
  if (response.status != 429 && response.status < 500) return false;
  if (response.status != 503 || response.body.size() > 65536) return true;
  const auto envelope = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  return !(envelope.is_object() && envelope.value("errorType", nlohmann::json()) == "timeout");
}

// Failures no attempt would mend: a URL libcurl cannot use, a TLS handshake that failed (an
// https URL of a plain HTTP port: "wrong version number"), a certificate or CA file refused.
bool lasting_failure(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      return true;
    default:
      return false;
  }
}

// libcurl's progress callback: stops the transfer once the connection was interrupted (the
// check is a statement step, so it runs at most every 50 ms; nothing may throw through curl).
struct InterruptWatch {
  InterruptCheck* check;
  std::chrono::steady_clock::time_point next{};
  bool interrupted = false;
};
int on_progress(void* data, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& watch = *static_cast<InterruptWatch*>(data);
  const auto now = std::chrono::steady_clock::now();
  if (now < watch.next) return 0;
  watch.next = now + std::chrono::milliseconds(50);
  try {
    watch.check->check();
  } catch (const InterruptedError&) {
    watch.interrupted = true;
    return 1;
  } catch (...) {
  }
  return 0;
}

std::string base64(const std::string& bytes) {
  static const char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k)
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(chunk >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// %XX escapes decoded, as libcurl decodes a URL's user and password before sending them.
std::string percent_decoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Whether a header of the `headers` setting likely carries a credential.
bool secret_header(const std::string& name) {
  const std::string lower = to_lower(name);
  for (const char* word : {"auth", "cookie", "token", "key", "secret", "pass", "jwt", "session", "signature", "credential"})
    if (lower.find(word) != std::string::npos) return true;
  return false;
}

// The user information of a URL ("user:password" of scheme://user:password@host/...), or "".
std::string url_user_info(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return {};
  const size_t from = scheme + 3, end = url.find_first_of("/?#", from);
  const size_t at = url.rfind('@', end == std::string::npos ? std::string::npos : end);
  return at == std::string::npos || at < from ? std::string() : url.substr(from, at - from);
}

// What a request carried that a server or proxy may echo back in an error page (some print the
// request's headers): each credential as sent, and as its Authorization header encodes it.
std::vector<std::string> sent_secrets(const std::string& url, const nlohmann::json& headers, const std::string& token,
                                      const std::string& user, const std::string& password) {
  std::vector<std::string> secrets;
  const std::string user_info = url_user_info(url);
  if (const size_t colon = user_info.find(':'); colon != std::string::npos) {
    const std::string sent_user = percent_decoded(user_info.substr(0, colon));
    const std::string sent_password = percent_decoded(user_info.substr(colon + 1));
    for (const std::string& form : {user_info.substr(colon + 1), sent_password, base64(user_info),
                                    base64(sent_user + ":" + sent_password)})
      secrets.push_back(form);
  } else if (!user_info.empty()) {
    // A user name alone (https://TOKEN@host: some services take a token so) is sent as
    // "TOKEN:", and may be the secret itself (settings show it masked too).
    const std::string sent_user = percent_decoded(user_info);
    for (const std::string& form : {user_info, sent_user, base64(user_info + ":"), base64(sent_user + ":")})
      secrets.push_back(form);
  }
  for (const auto& item : headers.items())
    if (secret_header(item.key())) {
      const std::string value = item.value().get<std::string>();
      secrets.push_back(value);
      if (const size_t space = value.find(' '); space != std::string::npos) secrets.push_back(value.substr(space + 1));
    }
  if (!token.empty()) secrets.push_back(token);
  if (!password.empty()) {
    secrets.push_back(password);
    secrets.push_back(base64(user + ":" + password));
  }
  return secrets;
}

}  // namespace

bool names_loopback(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return false;
  const size_t end = std::min(url.find_first_of("/?#", scheme + 3), url.size());
  const size_t at = url.rfind('@', end);
  const size_t from = at == std::string::npos || at < scheme + 3 ? scheme + 3 : at + 1;
  std::string host = to_lower(url.substr(from, end - from));
  if (!host.empty() && host.front() == '[') return host.rfind("[::1]", 0) == 0;
  host = host.substr(0, host.find(':'));
  if (!host.empty() && host.back() == '.') host.pop_back();
  const bool ipv4 = !host.empty() && host.find_first_not_of("0123456789.") == std::string::npos;
  return host == "localhost" || (ipv4 && host.rfind("127.", 0) == 0);
}

struct HttpClient::Handle {
  CURL* curl = nullptr;
};

HttpClient::HttpClient() : handle_(std::make_unique<Handle>()) {
  std::call_once(curl_initialized, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpClient::~HttpClient() {
  if (handle_->curl) curl_easy_cleanup(handle_->curl);
}

std::string HttpClient::escape(const std::string& value) {
  char* escaped = curl_easy_escape(nullptr, value.data(), static_cast<int>(value.size()));
  if (!escaped) throw std::bad_alloc();
  std::string result(escaped);
  curl_free(escaped);
  return result;
}

HttpResponse HttpClient::send(const std::string& url, const std::string& form_body, const Settings& settings) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handle_->curl) {
    handle_->curl = curl_easy_init();
    if (!handle_->curl) throw Error("cannot initialize libcurl");
  }
  CURL* curl = handle_->curl;
  const std::string shown_url = redact_url(url);
  const long timeout_ms = static_cast<long>(settings.get_int("timeout_ms"));
  const int retries = static_cast<int>(settings.get_int("retries"));

  CurlList headers;
  const nlohmann::json extra = nlohmann::json::parse(settings.get("headers"));
  for (const auto& item : extra.items()) headers.add(item.key() + ": " + item.value().get<std::string>());
  // One Authorization header, from one complete set of settings: a half-set or doubly-set one
  // would otherwise be sent as something the user did not mean (an empty password, no auth).
  const bool bearer = !settings.get("bearer_token_file").empty();
  const bool user = !settings.get("basic_auth_user").empty();
  const bool password_file = !settings.get("basic_auth_password_file").empty();
  if (bearer && (user || password_file))
    throw Error("settings 'bearer_token_file' and 'basic_auth_user'/'basic_auth_password_file' are both set: a request "
                "carries one Authorization header; unset one, e.g. SELECT pp_config('basic_auth_user', '')");
  // A URL's user:password@ would be sent as basic auth only where no other Authorization is.
  if (url_user_info(url).find(':') != std::string::npos && (bearer || user))
    throw Error(std::string("prometheus_url holds a password and setting '") +
                (bearer ? "bearer_token_file" : "basic_auth_user") +
                "' is set too: a request carries one Authorization header; take the password out of the URL or "
                "unset the setting");
  if (user != password_file)
    throw Error(user ? "setting 'basic_auth_user' is set but 'basic_auth_password_file' is not: basic auth needs both"
                     : "setting 'basic_auth_password_file' is set but 'basic_auth_user' is not: basic auth needs both");
  std::string token, password;
  if (bearer) {
    token = read_secret_file(settings.get("bearer_token_file"), "bearer_token_file", false);
    headers.add("Authorization: Bearer " + token);
  }
  if (password_file)
    password = read_secret_file(settings.get("basic_auth_password_file"), "basic_auth_password_file", true);
  const std::vector<std::string> secrets = sent_secrets(url, extra, token, settings.get("basic_auth_user"), password);

  InterruptCheck interrupted(interrupt_db_);
  HttpResponse response;
  for (int attempt = 0;; ++attempt) {
    response.body.clear();
    Transfer transfer;
    transfer.body = &response.body;
    transfer.limit = static_cast<size_t>(settings.get_int("max_response_bytes"));
    char error_buffer[CURL_ERROR_SIZE] = {0};
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, read_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    // Prometheus compresses its JSON about tenfold, which pays over a network; on this machine
    // it only costs the server time (a 4.5 MB answer: 0.25 s to gzip, 0.05 s to send it plain).
    const std::string compression = settings.get("http_compression");
    // Either way libcurl decodes what a server compresses unasked.
    const bool compress = compression == "on" || (compression == "auto" && !names_loopback(url));
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, compress ? "" : "identity");  // "": all libcurl decodes
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "precisionprobe/" PP_VERSION);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, settings.get_bool("tls_verify") ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, settings.get_bool("tls_verify") ? 2L : 0L);
    if (!settings.get("tls_ca_file").empty())
      curl_easy_setopt(curl, CURLOPT_CAINFO, settings.get("tls_ca_file").c_str());
    if (user) {
      curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(curl, CURLOPT_USERNAME, settings.get("basic_auth_user").c_str());
      curl_easy_setopt(curl, CURLOPT_PASSWORD, password.c_str());
    }
    if (!form_body.empty()) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form_body.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(form_body.size()));
    }

    InterruptWatch watch{&interrupted};
    if (interrupt_db_) {
      curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
      curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &watch);
      curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    }

    ++requests_sent_;
    const CURLcode code = curl_easy_perform(curl);
    if (watch.interrupted) throw InterruptedError();
    response.attempts = attempt + 1;
    bytes_received_ += static_cast<long long>(response.body.size());
    response.status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    response.content_type = transfer.content_type;
    response.location = transfer.location;

    // An error page is shown to the user (the caller quotes the server's message): without the
    // credentials this request sent.
    if (response.status < 200 || response.status >= 300) hide_secrets(response.body, secrets);
    response.secrets = secrets;  // (the parsers hide them wherever they quote a body)

    std::string failure;
    if (transfer.too_large) {
      throw Error("the response from " + shown_url + " exceeds " +
                  "max_response_bytes (" + settings.get("max_response_bytes") +
                  " bytes); narrow the query or raise the setting");
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
      failure = "timed out after " + std::to_string(timeout_ms) + " ms (setting timeout_ms)";
    } else if (code == CURLE_OUT_OF_MEMORY && !error_buffer[0]) {
      // What libcurl 7.x answers to a response header line over its 100 KB limit, far likelier
      // than memory running out.
      failure = "libcurl reports 'Out of memory', its answer to a response header line over 100 KB: a server "
                "or proxy in front of it sends one";
    } else if (code != CURLE_OK) {
      failure = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
    } else if (!retryable(response)) {
      return response;
    }
    if (attempt >= retries || (!failure.empty() && lasting_failure(code))) {
      if (!failure.empty())
        throw Error("cannot reach " + shown_url + ": " + failure +
                    (attempt > 0 ? " (after " + std::to_string(attempt + 1) + " attempts)" : ""));
      return response;  // the last 429/5xx goes to the caller, who shows the server's message
    }
    // Exponential backoff from 100 ms, capped at 5 s; a server's Retry-After wins, up to 30 s
    // and within the time limit of one request, so a slow server cannot stall a statement
    // indefinitely.
    double wait_ms = 100.0 * std::pow(2.0, attempt);
    if (transfer.retry_after_seconds >= 0) wait_ms = transfer.retry_after_seconds * 1000.0;
    wait_ms = std::min({wait_ms, 5000.0 * (transfer.retry_after_seconds >= 0 ? 6 : 1),
                        static_cast<double>(timeout_ms)});
    // (In slices, so that an interrupt is noticed while waiting.)
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(wait_ms));
    for (auto now = std::chrono::steady_clock::now(); now < until; now = std::chrono::steady_clock::now()) {
      interrupted.check();
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(50)));
    }
  }
}

}  // namespace pp
