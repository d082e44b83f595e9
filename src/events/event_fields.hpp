// The fields of one layer event, defined once: X(member, "json_key", Type) for each, in the
// order the hook client writes them (python/precisionprobe/_event_format.py EVENT_FIELDS).
// The line parser, layer_events' columns, the import into pp_events, the tests and the fuzz
// oracle all read this list.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

// Text may not be null; NullableText and NullableInteger may be JSON null (host_name .. namespace
// are absent outside Kubernetes; gpu is null on CPU).
#define PP_EVENT_FIELDS(X)                      \
  X(job_id, "job_id", Text)                     \
  X(host_name, "host_name", NullableText)       \
  X(ip, "ip", NullableText)                     \
  X(pod, "pod", NullableText)                   \
  X(namespace_, "namespace", NullableText)      \
  X(gpu_uuid, "gpu_uuid", Text)                 \
  X(gpu, "gpu", NullableInteger)                \
  X(rank, "rank", Integer)                      \
  X(local_rank, "local_rank", Integer)          \
  X(world_size, "world_size", Integer)          \
  X(pid, "pid", Integer)                        \
  X(epoch, "epoch", Integer)                    \
  X(batch, "batch", Integer)                    \
  X(layer, "layer", Text)                       \
  X(layer_type, "layer_type", Text)             \
  X(forward, "forward", Boolean)                \
  X(t_start_ns, "t_start_ns", Integer)          \
  X(t_end_ns, "t_end_ns", Integer)              \
  X(cpu_num, "cpu_num", Number)

namespace pp {

enum class FieldType { Text, NullableText, Integer, NullableInteger, Boolean, Number };

// A value that may be JSON null.
template <class T>
struct Nullable {
  T value{};
  bool null = false;
};

template <FieldType>
struct FieldStorage;
template <> struct FieldStorage<FieldType::Text> { using type = std::string; };
template <> struct FieldStorage<FieldType::NullableText> { using type = Nullable<std::string>; };
template <> struct FieldStorage<FieldType::Integer> { using type = int64_t; };
template <> struct FieldStorage<FieldType::NullableInteger> { using type = Nullable<int64_t>; };
template <> struct FieldStorage<FieldType::Boolean> { using type = bool; };
template <> struct FieldStorage<FieldType::Number> { using type = double; };

// One event, in the column order of layer_events.
struct LayerEvent {
#define PP_EVENT_MEMBER(member, key, kind) FieldStorage<FieldType::kind>::type member{};
  PP_EVENT_FIELDS(PP_EVENT_MEMBER)
#undef PP_EVENT_MEMBER
  // Set by the compact decoder: equal for two events whose job and device fields (context) or
  // layer fields come from the same definitions, so that a reader of millions of events compares
  // or looks up those texts once per definition (each definition takes a new stamp, process-wide).
  // 0: not known (JSON Lines).
  uint64_t context_stamp = 0;
  uint64_t layer_stamp = 0;
};

// Field indexes: kEventField_job_id = 0, ... in the list's order.
enum EventField : int {
#define PP_EVENT_ENUM(member, key, type) kEventField_##member,
  PP_EVENT_FIELDS(PP_EVENT_ENUM)
#undef PP_EVENT_ENUM
  kEventFieldCount
};

constexpr std::string_view kEventFieldKeys[kEventFieldCount] = {
#define PP_EVENT_KEY(member, key, type) key,
    PP_EVENT_FIELDS(PP_EVENT_KEY)
#undef PP_EVENT_KEY
};

constexpr FieldType kEventFieldTypes[kEventFieldCount] = {
#define PP_EVENT_TYPE(member, key, type) FieldType::type,
    PP_EVENT_FIELDS(PP_EVENT_TYPE)
#undef PP_EVENT_TYPE
};

// Calls visit(member) with the member of `event` that is field `field`.
template <class Event, class Visit>
void visit_event_field(Event& event, int field, Visit&& visit) {
  switch (field) {
#define PP_EVENT_VISIT(member, key, type) \
  case kEventField_##member: visit(event.member); break;
    PP_EVENT_FIELDS(PP_EVENT_VISIT)
#undef PP_EVENT_VISIT
    default: break;
  }
}

// Unix nanoseconds as unix seconds, the double nearest the exact value (so that
// t_start = 1714000000.1004 holds for t_start_ns = 1714000000100400000): whole seconds and the
// fraction are converted separately, since ns itself has no exact double above 2^53.
// The latest time an event may have, 2^62 ns (in 2116): with times in [0, kMaxEventNs], a
// difference or sum of two never overflows 64 bits.
constexpr int64_t kMaxEventNs = int64_t{1} << 62;

inline double ns_to_seconds(int64_t ns) {
  return static_cast<double>(ns / 1000000000) + static_cast<double>(ns % 1000000000) / 1e9;
}

}  // namespace pp
