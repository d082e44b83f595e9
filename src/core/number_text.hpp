// Numbers as the extension writes them in text (error messages, ids, settings' values): one way
// everywhere, as a user would write the number back. The shortest of 15, 16 or 17 significant
// digits that reads back as the same double: 0.5, 1e+300, 1700000000, 1000.0000000000002 (not
// 100000000000000.000000, nor 15 digits that read back as 1000). Inf, -Inf and NaN as SQLite
// shows them.
#pragma once
#include <string>

namespace pp {

std::string number_text(double value);

}  // namespace pp
