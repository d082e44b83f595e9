// Paths that name something other than a regular file, or something the user may not read:
// layer_events, layer_jobs and pp_refresh read regular files only (a FIFO would block them for
// good, /dev/zero and /dev/urandom never end), say which path they refused and why, and never
// pass over a directory they cannot read without saying so.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

using pp_test::TempDir;

std::string fifo(const TempDir& dir, const std::string& name) {
  const std::string path = dir / name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  if (::mkfifo(path.c_str(), 0644) != 0) throw std::runtime_error("mkfifo failed");
  return path;
}

TEST(SpecialFiles, FifoNamedDirectlyIsAnErrorNamingFunctionArgumentAndPath) {
  TempDir dir;
  const std::string path = fifo(dir, "rank0.jsonl");
  pp_test::TestDb db;
  const std::string what = "argument 'path' names a FIFO, not a regular file: '" + path + "'";
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {path}), "layer_events: " + what);
  EXPECT_EQ(db.error("SELECT * FROM layer_jobs(?1)", {path}), "layer_jobs: " + what);
  EXPECT_EQ(db.error("SELECT * FROM pp_refresh(?1)", {path}), "pp_refresh: " + what);
}

TEST(SpecialFiles, DevicesNamedDirectlyAreErrors) {
  pp_test::TestDb db;
  EXPECT_EQ(db.error("SELECT * FROM layer_events('/dev/zero')"),
            "layer_events: argument 'path' names a character device, not a regular file: '/dev/zero'");
  EXPECT_EQ(db.error("SELECT count(*) FROM layer_jobs('/dev/urandom')"),
            "layer_jobs: argument 'path' names a character device, not a regular file: '/dev/urandom'");
}

TEST(SpecialFiles, FifoInADirectoryOrGlobIsSkippedWithAWarning) {
  TempDir dir;
  dir.write("job1/rank0.jsonl", pp_test::cpu_lines(0, 3));
  const std::string pipe = fifo(dir, "job1/rank1.jsonl");
  pp_test::TestDb db;
  for (const std::string& path : {dir / "job1", dir / "job1/*.jsonl"}) {
    EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {path}).integer, 3) << path;
    EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text,
              "[\"layer_events: skipped '" + pipe + "': a FIFO, not a regular file\"]");
  }
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 3);
  EXPECT_NE(db.scalar("SELECT pp_last_warnings()").text.find("pp_refresh: skipped '" + pipe + "': a FIFO"),
            std::string::npos);
}

TEST(SpecialFiles, ALinkToADirectoryIsNotFollowedAndSaysSo) {
  TempDir dir;
  dir.write("runs/job1/rank0.jsonl", pp_test::cpu_lines(0, 3));
  const std::string link = dir / "runs/latest";
  ASSERT_EQ(::symlink((dir / "runs/job1").c_str(), link.c_str()), 0);
  pp_test::TestDb db;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {dir / "runs"}).integer, 3);
  EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text,
            "[\"layer_events: skipped '" + link +
                "': a link to a directory, not followed (name it, or what it links to, to read it)\"]");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {link}).integer, 3);  // named, it is read
}

TEST(SpecialFiles, GlobMatchingOnlyDevicesGivesNoRowsAndSaysWhy) {
  pp_test::TestDb db;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events('/dev/zer[o]')").integer, 0);
  EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text,
            "[\"layer_events: skipped '/dev/zero': a character device, not a regular file\"]");
}

// Runs `body` as a user without privileges and returns what it returns. Root reads every file
// whatever its mode, so as root the body runs in a child process that drops to nobody (65534);
// otherwise it runs here.
std::string unprivileged(const std::function<std::string()>& body) {
  if (::geteuid() != 0) return body();
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    std::string out;
    try {
      out = ::setgid(65534) != 0 || ::setuid(65534) != 0 ? "cannot drop privileges" : body();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    const ssize_t written = ::write(pipe_fds[1], out.data(), out.size());
    ::_exit(written == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return out;
}

class Unreadable : public ::testing::Test {
 protected:
  void SetUp() override {
    // The temporary directory is private to its owner; the unprivileged user must reach into it.
    std::filesystem::permissions(dir.path(), std::filesystem::perms::all);
    dir.write("job1/rank0.jsonl", pp_test::cpu_lines(0, 3));
    dir.write("job1/secret/rank1.jsonl", pp_test::cpu_lines(0, 2));
    for (const char* sub : {"job1", "job1/rank0.jsonl"})
      std::filesystem::permissions(dir / sub, std::filesystem::perms::all);
    std::filesystem::permissions(dir / "job1/secret", std::filesystem::perms::none);
  }
  // Lets the directory be removed.
  void TearDown() override { std::filesystem::permissions(dir / "job1/secret", std::filesystem::perms::owner_all); }
  TempDir dir;
};

TEST_F(Unreadable, SubdirectoryIsSkippedWithAWarningSayingPermissionDenied) {
  const std::string out = unprivileged([&] {
    pp_test::TestDb db;
    const int64_t rows = db.scalar("SELECT count(*) FROM layer_events(?1)", {dir / "job1"}).integer;
    return std::to_string(rows) + " " + db.scalar("SELECT pp_last_warnings()").text;
  });
  EXPECT_EQ(out, "3 [\"layer_events: skipped directory '" + dir / "job1/secret" + "': Permission denied\"]");
}

TEST_F(Unreadable, DirectoryNamedDirectlyIsAnErrorSayingPermissionDenied) {
  const std::string out = unprivileged([&] {
    pp_test::TestDb db;
    return db.error("SELECT * FROM layer_jobs(?1)", {dir / "job1/secret"});
  });
  EXPECT_EQ(out, "layer_jobs: cannot read directory '" + dir / "job1/secret" + "': Permission denied");
}

TEST_F(Unreadable, FileNamedDirectlyIsAnErrorSayingPermissionDenied) {
  std::filesystem::permissions(dir / "job1/rank0.jsonl", std::filesystem::perms::none);
  const std::string out = unprivileged([&] {
    pp_test::TestDb db;
    return db.error("SELECT * FROM pp_refresh(?1)", {dir / "job1/rank0.jsonl"});
  });
  EXPECT_EQ(out, "pp_refresh: cannot open '" + dir / "job1/rank0.jsonl" + "': Permission denied");
}

}  // namespace
