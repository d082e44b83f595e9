// A short digest of a long key, for maps that would otherwise hold the key itself: 112 bits of
// a hash keyed by a number drawn once per process, so that no input (a hostile server's
// labels) can be made to collide without knowing it, and two keys share a digest with odds
// of about n^2 / 2^113 (1e-22 for a million keys).
#pragma once
#include <string>
#include <string_view>

namespace pp {

// 15 bytes, the first of them NUL (so a digest never equals a key of printable text) and
// short enough that std::string keeps it without a heap allocation.
std::string keyed_digest(std::string_view key);

}  // namespace pp
