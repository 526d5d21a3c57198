// tools/report/report_html.h — `fsdpx report`'s file outputs: one self-contained HTML page (inline CSS and
// SVG, no script, no external URL) with the charts and the tables, and a CSV with one row per point.
// Leaves out interactivity: every number is also in a table or a tooltip.
#pragma once

#include <string>

#include "tools/report/report_page.h"

namespace fsdpx {

// Figure ids: fig-memory-step, fig-stream-timeline, fig-sweep (weak scaling, or the only sweep),
// fig-sweep-strong (strong scaling, with nodes varied), fig-memory-breakdown. Rows over the memory
// capacity are marked: class "oom" in the tables, red crosses (class "oom-mark") in the sweep charts,
// "OUT OF MEMORY" on their breakdown bars.
std::string report_html(const ReportPage& page);

// Header: the varied parameters (one column each), scaling, label, status (ok, out_of_memory or error),
// world_size, global_batch, tokens_per_sequence, step_time_s, tokens_per_s_per_gpu, cluster_tokens_per_s,
// time_to_train_s (empty without --train-tokens), mfu, exposed_comm_s, peak_memory_bytes,
// memory_capacity_bytes, peak_<category>_bytes, plan, error; one line per row of every sweep. Numbers are
// exact (shortest round trip). Fields with commas or quotes are quoted (RFC 4180).
std::string report_csv(const ReportPage& page);

}  // namespace fsdpx
