// Secrets never appear in setting reads, pp_settings or errors, whatever the URL looks like, and
// a secret file is read as one line of a regular file (tests/sql/secrets_errors.sql has more).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "test_db.hpp"

namespace {

// A scratch directory with the files a test writes, removed afterwards.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    char name[] = "/tmp/pp_secrets_XXXXXX";
    path = mkdtemp(name);
  }
  ~ScratchDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const std::string& content) const {
    const std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }
};

// A connection whose requests go nowhere at once (port 1 refuses), with no retries.
struct Offline : pp_test::TestDb {
  Offline() { query("SELECT pp_config('prometheus_url', 'http://127.0.0.1:1'), pp_config('retries', 0)"); }
  std::string request_error() { return error("SELECT * FROM prom_label_values('job')"); }
};

bool shown_anywhere(pp_test::TestDb& db, const std::string& secret) {
  const std::string settings = db.scalar("SELECT group_concat(value, ' ') FROM pp_settings").text;
  return settings.find(secret) != std::string::npos ||
         db.scalar("SELECT pp_config('prometheus_url')").text.find(secret) != std::string::npos;
}

}  // namespace

TEST(Secrets, PasswordsWithUrlDelimitersAreMaskedEverywhere) {
  for (const std::string password : {"pa:ss", "p%2Fss", "s3cr%40t", "p%23ss%3Fw"}) {
    pp_test::TestDb db;
    const std::string url = "http://reader:" + password + "@127.0.0.1:1/prometheus";
    db.query("SELECT pp_config('prometheus_url', ?)", {url});
    EXPECT_FALSE(shown_anywhere(db, password)) << password;
    EXPECT_EQ(db.scalar("SELECT pp_config('prometheus_url')").text, "http://reader:***@127.0.0.1:1/prometheus");
    db.query("SELECT pp_config('retries', 0)");
    const std::string error = db.error("SELECT * FROM prom_label_values('job')");
    EXPECT_NE(error.find("cannot reach http://reader:***@127.0.0.1:1"), std::string::npos) << error;
    EXPECT_EQ(error.find(password), std::string::npos) << error;
  }
}

TEST(Secrets, MalformedUrlsAreRefusedWithoutEchoingThem) {
  pp_test::TestDb db;
  for (const std::string url : {"http://reader:hun/ter2@prom:9090", "http://reader:hun#ter2@prom:9090",
                                 "http://reader:hun?ter2@prom:9090", "reader:hunter2@prom:9090",
                                 "http://reader:hunter2@", "http://reader:hunter2@prom:99999",
                                 "http://reader:hunter2 @prom", "http://reader:hunter2@prom\n",
                                 "http://reader:hunter2@[::1:9090",
                                 "http://reader:hunter2@::1]:9090", "http://reader:hunter2@[::1]x:9090",
                                 "http://reader:hun@ter2@prom:9090"}) {
    const std::string error = db.error("SELECT pp_config('prometheus_url', ?)", {url});
    EXPECT_NE(error.find("pp_config: setting 'prometheus_url' needs an http:// or https:// URL"), std::string::npos)
        << error;
    EXPECT_EQ(error.find("hunter2"), std::string::npos) << error;
    EXPECT_EQ(error.find("ter2"), std::string::npos) << error;
  }
  EXPECT_NE(db.error("SELECT pp_config('prometheus_url', 'http://reader:hun/ter2@prom:9090')").find("percent-encode"),
            std::string::npos);
  EXPECT_NE(db.error("SELECT pp_config('prometheus_url', 'http://')").find("has no host"), std::string::npos);
  // An '@' in the password, not encoded: curl took the first '@' as the host's start, and every
  // request failed, after its retries, as "URL using bad/illegal format".
  EXPECT_NE(db.error("SELECT pp_config('prometheus_url', 'http://reader:hun@ter2@prom:9090')").find("as %40"),
            std::string::npos);
  EXPECT_FALSE(shown_anywhere(db, "hunter2"));
}

TEST(Secrets, TokenFileIsOneLineOfPrintableCharacters) {
  ScratchDir dir;
  Offline db;
  auto with_token = [&](const std::string& file) {
    db.query("SELECT pp_config('bearer_token_file', ?)", {file});
    return db.request_error();
  };
  // A token with its line break is accepted: the request goes out (and finds no server).
  EXPECT_NE(with_token(dir.write("good", "abc.DEF-123_~+/=\n")).find("cannot reach"), std::string::npos);
  const std::string two_lines = with_token(dir.write("two", "abc\nX-Injected: yes\n"));
  EXPECT_NE(two_lines.find("setting 'bearer_token_file' names '" + dir.path + "/two', which holds more than one line"),
            std::string::npos)
      << two_lines;
  EXPECT_EQ(two_lines.find("X-Injected"), std::string::npos);
  const std::string shadow_like = with_token(dir.write("shadow", "root:$6$salt$hash:19000:0:99999:7:::\ndaemon:*:19000::\n"));
  EXPECT_NE(shadow_like.find("more than one line"), std::string::npos) << shadow_like;
  EXPECT_EQ(shadow_like.find("$6$"), std::string::npos);
  EXPECT_NE(with_token(dir.write("control", "abc\rX-Injected: yes")).find("holds a control character"),
            std::string::npos);
  EXPECT_NE(with_token(dir.write("space", "abc def")).find("holds a space"), std::string::npos);
  EXPECT_NE(with_token(dir.write("empty", "\n\n")).find("which is empty"), std::string::npos);
  EXPECT_NE(with_token(dir.write("large", std::string(100000, 'a'))).find("larger than 64 KiB"), std::string::npos);
  EXPECT_NE(with_token(dir.path).find("which is not a regular file"), std::string::npos);
}

TEST(Secrets, TokenPastedWhereItsFileBelongsIsNeverShown) {
  ScratchDir dir;
  Offline db;
  // A JWT and a base64 token with '/' (no directory 'c2Vj' here): neither looks like a path.
  for (const std::string token : {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwcCJ9.c2lnbmF0dXJl", "c2Vj/cmV0+dG9r/ZW4="}) {
    for (const char* setting : {"bearer_token_file", "basic_auth_password_file"}) {
      SCOPED_TRACE(std::string(setting) + " " + token);
      const std::string refused = db.error("SELECT pp_config(?1, ?2)", {setting, token});
      EXPECT_EQ(refused, std::string("pp_config: setting '") + setting +
                             "' needs the path of a file holding the secret, and neither a file nor a directory "
                             "holding one has the name given (not shown, since it may be the secret itself: put the "
                             "secret in a file and give that file's path)");
      EXPECT_FALSE(shown_anywhere(db, token));
      EXPECT_EQ(refused.find(token), std::string::npos);
    }
  }
  // A file named without a '/' (in the working directory) is taken; once it is gone, the error
  // does not show its name either.
  struct WorkingDirectory {
    char previous[4096] = {0};
    explicit WorkingDirectory(const std::string& to) {
      if (!getcwd(previous, sizeof previous) || chdir(to.c_str()) != 0) previous[0] = 0;
    }
    ~WorkingDirectory() {
      if (previous[0]) {
        EXPECT_EQ(chdir(previous), 0);
      }
    }
  };
  const std::string file = dir.write("Zq9secretfile", "abc\n");
  std::string gone;
  {
    WorkingDirectory in(dir.path);
    ASSERT_NE(in.previous[0], 0);
    db.query("SELECT pp_config('bearer_token_file', 'Zq9secretfile')");
    std::remove(file.c_str());
    gone = db.request_error();
  }
  EXPECT_NE(gone.find("cannot read the file named by setting 'bearer_token_file': a name that looks like no path "
                      "(not shown, since it may be the secret itself)"),
            std::string::npos)
      << gone;
  EXPECT_EQ(gone.find("Zq9secretfile"), std::string::npos) << gone;
}

TEST(Secrets, FifoAsTokenFileIsRefusedAtOnce) {
  ScratchDir dir;
  const std::string fifo = dir.path + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Offline db;
  db.query("SELECT pp_config('bearer_token_file', ?)", {fifo});
  const std::string error = db.request_error();  // would block for ever if the FIFO were opened for reading
  EXPECT_NE(error.find("which is not a regular file"), std::string::npos) << error;
}

TEST(Secrets, AuthenticationIsOneCompleteSetOfSettings) {
  // A request carries one Authorization header: two ways set, or half of basic auth, would send
  // something the user did not mean (the bearer token alone, an empty password, nothing).
  ScratchDir dir;
  Offline db;
  db.query("SELECT pp_config('bearer_token_file', ?)", {dir.write("token", "t0k3n\n")});
  db.query("SELECT pp_config('basic_auth_user', 'reader')");
  std::string error = db.request_error();
  EXPECT_NE(error.find("settings 'bearer_token_file' and 'basic_auth_user'/'basic_auth_password_file' are both set"),
            std::string::npos) << error;
  EXPECT_EQ(error.find("t0k3n"), std::string::npos) << error;
  db.query("SELECT pp_config('bearer_token_file', '')");
  error = db.request_error();
  EXPECT_NE(error.find("setting 'basic_auth_user' is set but 'basic_auth_password_file' is not"), std::string::npos)
      << error;
  db.query("SELECT pp_config('basic_auth_user', '')");
  db.query("SELECT pp_config('basic_auth_password_file', ?)", {dir.write("password", "fish\n")});
  error = db.request_error();
  EXPECT_NE(error.find("setting 'basic_auth_password_file' is set but 'basic_auth_user' is not"), std::string::npos)
      << error;
}

TEST(Secrets, PasswordFileMayHoldSpacesButNotLineBreaks) {
  ScratchDir dir;
  Offline db;
  db.query("SELECT pp_config('basic_auth_user', 'reader')");
  db.query("SELECT pp_config('basic_auth_password_file', ?)", {dir.write("ok", "correct horse battery\n")});
  EXPECT_NE(db.request_error().find("cannot reach"), std::string::npos);
  db.query("SELECT pp_config('basic_auth_password_file', ?)", {dir.write("bad", "sword\nfish")});
  const std::string error = db.request_error();
  EXPECT_NE(error.find("setting 'basic_auth_password_file' names"), std::string::npos) << error;
  EXPECT_EQ(error.find("fish"), std::string::npos) << error;
}

// An argument echoed in an error comes back as text any caller can print: bytes that are not
// UTF-8 and control characters as U+FFFD, and a long one cut at 4,000 bytes, saying how long it
// was (a secret pasted where a file name belongs is not written out whole either).
TEST(Secrets, ErrorsEchoArgumentsAsShortValidText) {
  pp_test::TestDb db;
  EXPECT_EQ(db.error("SELECT pp_config('timeout_ms', CAST(x'ff01fe' AS TEXT))"),
            "pp_config: setting 'timeout_ms' needs an integer from 1 to 86400000, got '\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD'");
  const std::string long_value = db.error("SELECT pp_config('timeout_ms', printf('%.*c', 100000, 'x'))");
  EXPECT_LE(long_value.size(), 4040u);
  const std::string whole = "pp_config: setting 'timeout_ms' needs an integer from 1 to 86400000, got '" +
                            std::string(100000, 'x') + "'";
  EXPECT_NE(long_value.find("... (" + std::to_string(whole.size()) + " bytes in all)"), std::string::npos)
      << long_value.substr(long_value.size() - 60);
  EXPECT_EQ(long_value.rfind(whole.substr(0, 3000), 0), 0u);
  const std::string in_a_table = db.error("SELECT * FROM layer_events(printf('%.*c', 100000, 'y'))");
  EXPECT_LE(in_a_table.size(), 4040u);
  EXPECT_EQ(in_a_table.rfind("layer_events: ", 0), 0u) << in_a_table.substr(0, 80);
}

// A credential longer than servers take is refused when set, saying how long it is and never
// what it holds; one at the limit is kept.
TEST(Secrets, CredentialsLongerThanServersTakeAreRefusedUnshown) {
  pp_test::TestDb db;
  const std::string secret(1000000, 'k');
  struct Case {
    std::string setting, value, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"basic_auth_user", secret, "setting 'basic_auth_user' is 1000000 bytes long, more than 4096 (4 KiB"},
           {"headers", R"({"Authorization":"Bearer )" + secret + "\"}",
            "setting 'headers' header 'Authorization' with its value is 1000022 bytes long, more than 8192 (8 KiB"},
           {"headers", R"({"X-Scope-OrgID":")" + secret + "\"}",
            "setting 'headers' header 'X-Scope-OrgID' with its value is 1000015 bytes long, more than 8192"},
           {"prometheus_url", "http://reader:" + secret + "@127.0.0.1:1",
            "setting 'prometheus_url' is 1000026 bytes long, more than 4096 (4 KiB"},
           {"basic_auth_password_file", secret, "setting 'basic_auth_password_file' is 1000000 bytes long, more than 4096"},
           {"bearer_token_file", "/" + secret, "setting 'bearer_token_file' is 1000001 bytes long, more than 4096"},
       }) {
    const std::string error = db.error("SELECT pp_config(?, ?)", {c.setting, c.value});
    EXPECT_EQ(error.rfind("pp_config: " + c.expected, 0), 0u) << error.substr(0, 300);
    EXPECT_NE(error.find("; not shown, since it may be a credential"), std::string::npos) << error.substr(0, 300);
    EXPECT_EQ(error.find("kkkkkk"), std::string::npos) << c.setting;
    EXPECT_FALSE(shown_anywhere(db, "kkkkkk")) << c.setting;
  }
  const std::string ca = db.error("SELECT pp_config('tls_ca_file', '/' || printf('%.*c', 5000, 'c'))");
  EXPECT_EQ(ca, "pp_config: setting 'tls_ca_file' is 5001 bytes long, more than 4096 (4 KiB, the longest path the "
                "system opens); not shown");
  // At the limits: kept.
  EXPECT_EQ(db.scalar("SELECT length(pp_config('basic_auth_user', printf('%.*c', 4096, 'u')))").integer, 4096);
  EXPECT_EQ(db.scalar("SELECT pp_config('headers', json_object('X-Scope-OrgID', printf('%.*c', 8192 - 15, 'v')))").text,
            R"({"X-Scope-OrgID":"***"})");
  EXPECT_EQ(db.scalar("SELECT length(pp_config('prometheus_url', 'http://h:1/' || printf('%.*c', 4096 - 11, 'p')))")
                .integer, 4096);
}
