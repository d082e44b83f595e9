// The columns of pp_events (events_table.cpp), and the event an INSERT's values make.
#pragma once
#include "attribution/event_store.hpp"
#include "core/sqlite_api.hpp"

namespace pp {
namespace event_columns {

enum Column : int {
  kId, kJobId, kHostName, kIp, kPod, kNamespace, kGpuUuid, kGpu, kRank, kPid, kEpoch, kBatch, kLayer, kLayerType,
  kForward, kStartNs, kEndNs, kStart, kEnd, kCpuNum, kSourceFile, kLine, kFolded, kBlock, kColumnCount
};
constexpr const char* kSchema =
    "CREATE TABLE x(id INTEGER, job_id TEXT, host_name TEXT, ip TEXT, pod TEXT, namespace TEXT, gpu_uuid TEXT, "
    "gpu INTEGER, rank INTEGER, pid INTEGER, epoch INTEGER, batch INTEGER, layer TEXT, layer_type TEXT, "
    "forward INTEGER, t_start_ns INTEGER, t_end_ns INTEGER, t_start REAL, t_end REAL, cpu_num REAL, "
    "source_file TEXT, line INTEGER, folded INTEGER, block INTEGER HIDDEN)";
// The names of kSchema's columns, by Column (for messages).
constexpr const char* kColumnNames[kColumnCount] = {
    "id", "job_id", "host_name", "ip", "pod", "namespace", "gpu_uuid", "gpu", "rank", "pid", "epoch", "batch",
    "layer", "layer_type", "forward", "t_start_ns", "t_end_ns", "t_start", "t_end", "cpu_num", "source_file",
    "line", "folded", "block"};
// The block columns of each shared column (BlockKeyColumn), by table column.
constexpr int kKeyOf[kColumnCount] = {-1, kKeyJobId, kKeyHostName, kKeyIp, kKeyPod, kKeyNamespace, kKeyGpuUuid,
                                      kKeyGpu, kKeyRank, kKeyPid, -1, -1, -1, -1, -1, -1, -1, -1, -1, kKeyCpuNum,
                                      kKeySourceFile, -1, -1, -1};

}  // namespace event_columns

// The event of an INSERT's column values (argv[2 + column] of xUpdate, by Column), and in folded
// whether the row says it is folded. What layer_events refuses as a malformed line is refused
// here too, rather than stored as something else: a BLOB (stored, it read back as '' or NULL),
// an empty job, GPU or layer, no layer type, a direction other than 0 or 1. The errors name the column.
StoredEvent inserted_event(sqlite3_value** columns, bool& folded);

}  // namespace pp
