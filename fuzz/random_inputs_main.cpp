// A main for a fuzz target without libFuzzer: each file of the corpus folders once, then random
// inputs until the seconds are up. For a target whose input is a string of choices read one byte
// at a time (sql_shape), random bytes are as good a source of new cases as coverage-guided
// mutation, and the target then needs no second, coverage-instrumented copy of what it links:
// the C++ tests' build links it with the engine they test (tests/CMakeLists.txt), sanitized in
// the sanitized build.
//
//   sql_shape_random [-seconds=N] [-seed=S] [-last=FILE] CORPUS_FOLDER_OR_FILE...
//
// Half the random inputs are fresh bytes (0 to 48 of them), half a corpus file with a few bytes
// changed, inserted or removed. The seed (from the clock unless given) is printed first: the same
// seed gives the same inputs. An input that fails a check (the target aborts) or that a
// sanitizer reports is written to FILE (-last) as the process dies, to be replayed:
// `sql_shape_random FILE` (PP_SQL_SHAPE_PRINT=1 prints its query).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

// A sanitizer's report ends the process without abort(): its death callback keeps the input.
#if defined(__SANITIZE_ADDRESS__)
#define PP_HAS_SANITIZER_DEATH_CALLBACK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PP_HAS_SANITIZER_DEATH_CALLBACK 1
#endif
#endif
#ifdef PP_HAS_SANITIZER_DEATH_CALLBACK
#include <sanitizer/common_interface_defs.h>
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

// The input running now, and where it goes if the process dies on it (opened beforehand: only
// async-signal-safe calls in the handler).
const Bytes* g_current = nullptr;
int g_last_fd = -1;

void keep_current_input() {
  if (g_last_fd < 0 || !g_current) return;
  if (ftruncate(g_last_fd, 0) == 0 && !g_current->empty() &&
      pwrite(g_last_fd, g_current->data(), g_current->size(), 0) < 0) {
    // nothing more to do in a dying process
  }
}

extern "C" void on_abort(int) {
  keep_current_input();
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

// A corpus file's bytes, or exit naming it (an input left out would change what a seed gives).
Bytes read_file(const char* program, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  Bytes bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in && !in.eof()) {
    std::fprintf(stderr, "%s: cannot read %s\n", program, path.c_str());
    std::exit(2);
  }
  return bytes;
}

// A corpus input changed in one to four places.
Bytes mutated(Bytes input, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  const int changes = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < changes; ++k) {
    const size_t at = input.empty() ? 0 : rng() % (input.size() + 1);
    switch (rng() % 3) {
      case 0:
        if (at < input.size()) {
          input[at] = static_cast<uint8_t>(byte(rng));
          break;
        }
        [[fallthrough]];
      case 1: input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(byte(rng))); break;
      default:
        if (at < input.size()) input.erase(input.begin() + static_cast<std::ptrdiff_t>(at));
    }
  }
  return input;
}

bool flag(const std::string& arg, const char* name, std::string& value) {
  const std::string prefix = std::string("-") + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  value = arg.substr(prefix.size());
  return true;
}

// A flag's number, or exit naming the flag.
template <typename Parse>
auto number(const char* program, const char* name, const std::string& value, Parse parse) {
  char* end = nullptr;
  errno = 0;
  const auto n = parse(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-') {
    std::fprintf(stderr, "%s: -%s=%s is not a non-negative number\n", program, name, value.c_str());
    std::exit(2);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  uint64_t seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::string last, value;
  std::vector<std::filesystem::path> corpus_files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (flag(arg, "seconds", value)) {
      seconds = number(argv[0], "seconds", value, [](const char* text, char** end) { return std::strtod(text, end); });
    } else if (flag(arg, "seed", value)) {
      seed = number(argv[0], "seed", value, [](const char* text, char** end) { return std::strtoull(text, end, 10); });
    } else if (flag(arg, "last", value)) {
      last = value;
    } else if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> folder;  // in name order: the same seed, the same inputs
      for (const auto& entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file()) folder.push_back(entry.path());
      std::sort(folder.begin(), folder.end());
      corpus_files.insert(corpus_files.end(), folder.begin(), folder.end());
    } else if (std::filesystem::is_regular_file(arg)) {
      corpus_files.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: %s is neither a flag (-seconds=, -seed=, -last=) nor a file or folder\n", argv[0],
                   arg.c_str());
      return 2;
    }
  }
  std::vector<Bytes> corpus;
  for (const auto& path : corpus_files) corpus.push_back(read_file(argv[0], path));
  std::printf("seed %llu, %zu corpus inputs\n", static_cast<unsigned long long>(seed), corpus.size());
  std::fflush(stdout);
  if (!last.empty()) {
    g_last_fd = open(last.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (g_last_fd < 0) {
      std::perror(last.c_str());
      return 2;
    }
    std::signal(SIGABRT, on_abort);
#ifdef PP_HAS_SANITIZER_DEATH_CALLBACK
    __sanitizer_set_death_callback(keep_current_input);
#endif
  }
  const auto run = [&](const Bytes& input) {
    g_current = &input;
    LLVMFuzzerTestOneInput(input.data(), input.size());
    g_current = nullptr;
  };
  for (const Bytes& input : corpus) run(input);

  std::mt19937_64 rng(seed);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t random = 0;
  while (std::chrono::steady_clock::now() < until) {
    Bytes input;
    if (corpus.empty() || rng() % 2 == 0) {
      input.resize(rng() % 49);
      for (uint8_t& b : input) b = static_cast<uint8_t>(rng());
    } else {
      input = mutated(corpus[rng() % corpus.size()], rng);
    }
    run(input);
    ++random;
  }
  std::printf("%zu corpus and %llu random inputs, every check held\n", corpus.size(), static_cast<unsigned long long>(random));
  return 0;
}
