#include "runtime/compiler/memory_planner.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace oi {

namespace {

constexpr int kEnd = std::numeric_limits<int>::max() / 2;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Bytes of value v in its storage type.
size_t value_bytes(const Graph& g, const std::vector<DType>& storage, int v) {
  return static_cast<size_t>(numel(g.values[v].shape)) * ocl_infer::dtype_size(storage[v]);
}

// The largest total of group bytes live at any one step.
size_t lower_bound(const MemoryPlan& mp) {
  std::vector<std::pair<int, long long>> ev;
  for (auto& grp : mp.groups) {
    if (grp.values.empty()) continue;
    ev.push_back({grp.first, static_cast<long long>(grp.bytes)});
    ev.push_back({grp.last == kEnd ? kEnd : grp.last + 1, -static_cast<long long>(grp.bytes)});
  }
  std::sort(ev.begin(), ev.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  long long cur = 0, best = 0;
  for (auto& [t, d] : ev) {
    cur += d;
    best = std::max(best, cur);
  }
  return static_cast<size_t>(best);
}

// Best-fit placement, largest groups first: each goes into the smallest gap (among groups that
// are live at the same time) that holds it. One arena when everything fits in `max_arena` bytes;
// otherwise several, each at most max_arena (first arena where the group fits, best fit in it).
void place_groups(MemoryPlan& mp, size_t max_arena) {
  std::vector<int> order(mp.groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (mp.groups[a].bytes != mp.groups[b].bytes) return mp.groups[a].bytes > mp.groups[b].bytes;
    return mp.groups[a].first < mp.groups[b].first;
  });
  auto place = [&](bool split) {
    mp.arena_sizes.clear();
    std::vector<int> placed;
    for (int gi : order) {
      StorageGroup& grp = mp.groups[gi];
      if (grp.values.empty()) continue;  // merged into a Concat's group
      const size_t need = align_up(std::max<size_t>(grp.bytes, 1), mp.alignment);
      bool done = false;
      for (int a = 0; a <= static_cast<int>(mp.arena_sizes.size()) && !done; ++a) {
        std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of time-overlapping groups
        for (int pj : placed) {
          const StorageGroup& o = mp.groups[pj];
          if (o.arena == a && o.first <= grp.last && grp.first <= o.last)
            busy.push_back({o.offset, o.offset + align_up(std::max<size_t>(o.bytes, 1), mp.alignment)});
        }
        std::sort(busy.begin(), busy.end());
        size_t best_off = 0, best_gap = std::numeric_limits<size_t>::max(), cursor = 0;
        bool found = false;
        for (auto& [st, e] : busy) {
          if (st > cursor && st - cursor >= need && st - cursor < best_gap) {
            best_gap = st - cursor;
            best_off = cursor;
            found = true;
          }
          cursor = std::max(cursor, e);
        }
        const size_t off = found ? best_off : cursor;
        if (split && off + need > max_arena && a < static_cast<int>(mp.arena_sizes.size())) continue;
        if (a == static_cast<int>(mp.arena_sizes.size())) mp.arena_sizes.push_back(0);
        grp.arena = a;
        grp.offset = off;
        mp.arena_sizes[a] = std::max(mp.arena_sizes[a], off + need);
        done = true;
        if (!split) break;
      }
      placed.push_back(gi);
    }
  };
  place(false);
  if (!mp.arena_sizes.empty() && mp.arena_sizes[0] > max_arena) place(true);
  mp.arena_bytes = 0;
  for (size_t a : mp.arena_sizes) mp.arena_bytes += a;
}

}  // namespace

MemoryPlan plan_memory(const Graph& g, const std::vector<int>& device_nodes,
                       const std::vector<PlanNodeTraits>& traits, const std::vector<DType>& storage,
                       size_t alignment, bool eliminate_concats, size_t max_arena) {
  MemoryPlan mp;
  mp.alignment = std::max<size_t>(alignment, 1);
  const size_t nv = g.values.size();
  mp.group_of.assign(nv, -1);

  std::vector<bool> pinned(nv, false);  // graph inputs and outputs: never shared
  for (int v : g.inputs) pinned[v] = true;
  for (int v : g.outputs) pinned[v] = true;

  auto planned = [&](int v) { return v >= 0 && !g.values[v].data; };
  // Last step at which each value is read; graph outputs stay live to the end.
  std::vector<int> last_use(nv, -1), def(nv, -1);
  for (int v : g.inputs) def[v] = -1;
  for (size_t step = 0; step < device_nodes.size(); ++step) {
    const Node& n = g.nodes[device_nodes[step]];
    for (int in : n.inputs)
      if (planned(in)) last_use[in] = static_cast<int>(step);
    if (n.epilogue.residual >= 0) last_use[n.epilogue.residual] = static_cast<int>(step);
    for (int o : n.outputs)
      if (planned(o)) def[o] = static_cast<int>(step);
  }
  for (int v : g.outputs) last_use[v] = kEnd;

  // Byte offset of each value inside its group's bytes (non-zero for views at an offset and
  // for Concat inputs placed in their slice).
  std::vector<size_t> offset_in_group(nv, 0);
  auto new_group = [&](int v) {
    StorageGroup grp;
    grp.values.push_back(v);
    grp.bytes = value_bytes(g, storage, v);
    grp.first = def[v];
    grp.last = std::max(last_use[v], def[v]);
    mp.groups.push_back(grp);
    mp.group_of[v] = static_cast<int>(mp.groups.size()) - 1;
  };
  auto join = [&](int v, int grp_id) {
    StorageGroup& grp = mp.groups[grp_id];
    grp.values.push_back(v);
    grp.bytes = std::max(grp.bytes, value_bytes(g, storage, v));
    grp.first = std::min(grp.first, def[v]);
    grp.last = std::max(grp.last, std::max(last_use[v], def[v]));
    mp.group_of[v] = grp_id;
  };
  auto group_pinned = [&](int grp_id) {
    for (int v : mp.groups[grp_id].values)
      if (pinned[v]) return true;
    return false;
  };

  for (int v : g.inputs)
    if (planned(v)) new_group(v);
  for (size_t step = 0; step < device_nodes.size(); ++step) {
    const Node& n = g.nodes[device_nodes[step]];
    const PlanNodeTraits& t = traits[step];
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      int o = n.outputs[k];
      if (!planned(o) || mp.group_of[o] >= 0) continue;
      // A view always shares its input's bytes (the op's build aliases them); if the view is a
      // graph output, its whole group simply stays live to the end.
      if (k == 0 && t.view && !n.inputs.empty() && planned(n.inputs[0]) &&
          mp.group_of[n.inputs[0]] >= 0) {
        join(o, mp.group_of[n.inputs[0]]);
        offset_in_group[o] = offset_in_group[n.inputs[0]];
        continue;
      }
      // A contiguous Slice/Split output: the same bytes at an (aligned) offset.
      if (k < t.view_offsets.size() && t.view_offsets[k] >= 0 && !n.inputs.empty() &&
          planned(n.inputs[0]) && mp.group_of[n.inputs[0]] >= 0 && !pinned[o]) {
        const size_t off = offset_in_group[n.inputs[0]] + static_cast<size_t>(t.view_offsets[k]);
        if (off % mp.alignment == 0) {
          join(o, mp.group_of[n.inputs[0]]);
          offset_in_group[o] = off;
          mp.output_views.push_back({static_cast<int>(step), static_cast<int>(k)});
          continue;
        }
      }
      if (k == 0 && t.inplace && !pinned[o]) {
        bool done = false;
        for (size_t i = 0; i < std::min<size_t>(2, n.inputs.size()) && !done; ++i) {
          int in = n.inputs[i];
          if (!planned(in) || mp.group_of[in] < 0) continue;
          int gid = mp.group_of[in];
          const Value &vi = g.values[in], &vo = g.values[o];
          if (vi.shape == vo.shape && vi.dtype == vo.dtype && storage[in] == storage[o] && mp.groups[gid].last == static_cast<int>(step) &&
              !group_pinned(gid)) {
            join(o, gid);
            offset_in_group[o] = offset_in_group[in];
            done = true;
          }
        }
        if (done) continue;
      }
      new_group(o);
    }
  }

  // Lower bound before Concat elimination: the liveness of the tensors themselves.
  mp.lower_bound_bytes = lower_bound(mp);

  // Concat elimination: the storage group of a Concat input moves into the Concat output's group,
  // so that its producers write straight into the concatenated tensor, when
  //  - every input of the Concat in that group sits at its slice: one base offset B (aligned)
  //    puts each of them at its offset in the output (a tensor and its contiguous Split views
  //    given to the Concat in order, as in YOLO's C2f blocks, share one B), each stored as the
  //    output is,
  //  - the group's bytes [B, B + bytes) lie inside the output, covered by its inputs' slices,
  //  - the group is not pinned, holds no graph input, and dies at the Concat: one read later
  //    (DenseNet reads each feature map in every later Concat of its block) would keep the whole
  //    output alive. An in-place chain (a conv, then an Add written over it) moves as a whole.
  for (size_t step = 0; step < device_nodes.size(); ++step) {
    const PlanNodeTraits& t = traits[step];
    if (!eliminate_concats || t.input_offsets.empty()) continue;
    const Node& n = g.nodes[device_nodes[step]];
    const int o = n.outputs.empty() ? -1 : n.outputs[0];
    if (!planned(o) || mp.group_of[o] < 0) continue;
    const size_t out_bytes = value_bytes(g, storage, o);
    auto at_of = [&](size_t k) { return k < t.input_offsets.size() ? t.input_offsets[k] : int64_t{-1}; };
    std::vector<int> tried;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      ++mp.concat_inputs;
      const int v = n.inputs[k];
      if (!planned(v) || mp.group_of[v] < 0 || offset_in_group[o] != 0) continue;
      const int gid = mp.group_of[v];
      if (gid == mp.group_of[o] || std::find(tried.begin(), tried.end(), gid) != tried.end()) continue;
      tried.push_back(gid);
      const StorageGroup& from = mp.groups[gid];
      bool ok = !from.values.empty() && from.bytes > 0 && !group_pinned(gid) &&
                from.last <= static_cast<int>(step);
      size_t extent = from.bytes;  // the group's bytes, views at offsets included
      for (int u : from.values) {
        ok = ok && g.values[u].producer >= 0;
        extent = std::max(extent, offset_in_group[u] + value_bytes(g, storage, u));
      }
      // The inputs in this group and the base offset that places each at its slice.
      std::vector<size_t> mine;
      int64_t base = -1;
      for (size_t j = 0; ok && j < n.inputs.size(); ++j) {
        const int w = n.inputs[j];
        if (!planned(w) || mp.group_of[w] != gid) continue;
        const int64_t at = at_of(j);
        const int64_t b = at - static_cast<int64_t>(offset_in_group[w]);
        if (at < 0 || value_bytes(g, storage, w) == 0 || storage[w] != storage[o] || b < 0 ||
            (base >= 0 && b != base))
          ok = false;
        base = b;
        mine.push_back(j);
      }
      ok = ok && base >= 0 && static_cast<size_t>(base) % mp.alignment == 0 &&
           static_cast<size_t>(base) + extent <= out_bytes;
      // [base, base + extent) covered by this group's own slices, which the Concat keeps apart
      // from every other input's slice (whether that one is known here or not, as a
      // QLinearConcat operand that is requantized).
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (size_t j : mine)
        spans.push_back({at_of(j), at_of(j) + static_cast<int64_t>(value_bytes(g, storage, n.inputs[j]))});
      std::sort(spans.begin(), spans.end());
      int64_t covered = base;
      for (auto& [b, e] : spans)
        if (b <= covered) covered = std::max(covered, e);
      ok = ok && covered >= base + static_cast<int64_t>(extent);
      if (!ok) continue;
      const int to = mp.group_of[o];
      StorageGroup& moved = mp.groups[gid];
      mp.groups[to].first = std::min(mp.groups[to].first, moved.first);
      mp.groups[to].last = std::max(mp.groups[to].last, moved.last);
      for (int u : moved.values) {
        mp.groups[to].values.push_back(u);
        mp.group_of[u] = to;
        offset_in_group[u] += static_cast<size_t>(base);
      }
      moved.values.clear();
      moved.bytes = 0;
      for (size_t j : mine) mp.concat_in_place.push_back({static_cast<int>(step), static_cast<int>(j)});
    }
  }

  // Concat outputs as views of a group that already holds every input at its slice. DenseNet's
  // last Concat of a block takes all of the block's feature maps in place (above); each earlier
  // Concat of the block reads a prefix of them in the same order, so its output is that prefix
  // of the same bytes and its copies go (they were 5.7 of DenseNet-121's 45 ms of kernels). Only
  // when
  //  - the output is planned, not pinned, at offset 0 of its group, which holds besides it only
  //    pure views of it and in-place chains over it (these get storage of their own);
  //  - every input sits in one other group G at base + its slice offset, for one aligned base,
  //    and their slices cover [base, base + output bytes);
  //  - nothing writes those bytes while the output is live: every other value of G that overlaps
  //    them is produced before the Concat or after the output's last reader, or by a Concat that
  //    writes nothing (all its inputs in place), or by a pure view.
  if (eliminate_concats) {
    auto writes_nothing = [&](int step) {
      const PlanNodeTraits& t = traits[step];
      if (t.view) return true;
      if (t.input_offsets.empty()) return false;
      const Node& n = g.nodes[device_nodes[step]];
      size_t in_place = 0;
      for (auto& [st, slot] : mp.concat_in_place) in_place += st == step;
      return in_place == n.inputs.size();
    };
    for (size_t step = 0; step < device_nodes.size(); ++step) {
      const PlanNodeTraits& t = traits[step];
      if (t.input_offsets.empty()) continue;
      const Node& n = g.nodes[device_nodes[step]];
      const int o = n.outputs.empty() ? -1 : n.outputs[0];
      if (!planned(o) || pinned[o] || mp.group_of[o] < 0 || offset_in_group[o] != 0 || n.inputs.empty()) continue;
      const int from = mp.group_of[o];
      bool ok = !group_pinned(from);
      // The output's group: the output and pure views of it (they move with it), and an in-place
      // chain written over it (DenseNet's BN + ReLU over each Concat), which gets storage of its
      // own instead, as when nothing is in place. Anything else (a Slice view at an offset) keeps
      // the Concat as it is.
      std::vector<int> with_o{o}, chain;
      {
        std::vector<int> members = mp.groups[from].values;
        std::sort(members.begin(), members.end(), [&](int a, int b) { return def[a] < def[b]; });
        auto in = [](const std::vector<int>& set, int v) { return std::find(set.begin(), set.end(), v) != set.end(); };
        for (int u : members) {
          if (u == o || !ok) continue;
          const int st = def[u];
          if (st < 0 || st <= static_cast<int>(step)) {
            ok = false;
            break;
          }
          const Node& pn = g.nodes[device_nodes[st]];
          const int in0 = pn.inputs.empty() ? -1 : pn.inputs[0], in1 = pn.inputs.size() > 1 ? pn.inputs[1] : -1;
          const bool first_output = !pn.outputs.empty() && pn.outputs[0] == u;
          if (first_output && traits[st].view && in(with_o, in0))
            with_o.push_back(u);
          else if (first_output && traits[st].view && in(chain, in0))
            chain.push_back(u);
          else if (first_output && traits[st].inplace &&
                   (in(with_o, in0) || in(chain, in0) || in(with_o, in1) || in(chain, in1)))
            chain.push_back(u);
          else
            ok = false;
        }
      }
      const size_t out_bytes = value_bytes(g, storage, o);
      int to = -1;
      int64_t base = -1;
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (size_t j = 0; ok && j < n.inputs.size(); ++j) {
        const int w = n.inputs[j];
        const int64_t at = j < t.input_offsets.size() ? t.input_offsets[j] : -1;
        ok = planned(w) && mp.group_of[w] >= 0 && mp.group_of[w] != from && at >= 0 && storage[w] == storage[o] &&
             value_bytes(g, storage, w) > 0;
        if (!ok) break;
        if (to < 0) to = mp.group_of[w];
        const int64_t b = static_cast<int64_t>(offset_in_group[w]) - at;
        ok = mp.group_of[w] == to && b >= 0 && (base < 0 || b == base);
        base = b;
        spans.push_back({at, at + static_cast<int64_t>(value_bytes(g, storage, w))});
      }
      ok = ok && to >= 0 && base >= 0 && static_cast<size_t>(base) % mp.alignment == 0 && !group_pinned(to);
      if (!ok) continue;
      std::sort(spans.begin(), spans.end());
      int64_t covered = 0;
      for (auto& [b, e] : spans)
        if (b <= covered) covered = std::max(covered, e);
      if (covered < static_cast<int64_t>(out_bytes)) continue;
      const size_t lo = static_cast<size_t>(base), hi = lo + out_bytes;
      if (hi > mp.groups[to].bytes) continue;
      int o_last = static_cast<int>(step);
      for (int u : with_o) o_last = std::max(o_last, last_use[u]);
      for (int u : mp.groups[to].values) {
        const size_t ulo = offset_in_group[u], uhi = ulo + value_bytes(g, storage, u);
        if (uhi <= lo || ulo >= hi) continue;
        ok = ok && (def[u] < static_cast<int>(step) || def[u] > o_last || writes_nothing(def[u]));
      }
      if (!ok) continue;
      // The chain keeps the group (its members' offsets are 0 there, as the output's were).
      StorageGroup& rest = mp.groups[from];
      rest.values = chain;
      rest.bytes = 0;
      rest.first = kEnd;
      rest.last = -1;
      for (int u : chain) {
        rest.bytes = std::max(rest.bytes, offset_in_group[u] + value_bytes(g, storage, u));
        rest.first = std::min(rest.first, def[u]);
        rest.last = std::max(rest.last, std::max(last_use[u], def[u]));
      }
      StorageGroup& into = mp.groups[to];
      for (int u : with_o) {
        into.values.push_back(u);
        into.first = std::min(into.first, def[u]);
        into.last = std::max(into.last, std::max(last_use[u], def[u]));
        mp.group_of[u] = to;
        offset_in_group[u] += lo;
      }
      for (size_t j = 0; j < n.inputs.size(); ++j)
        mp.concat_in_place.push_back({static_cast<int>(step), static_cast<int>(j)});
    }
  }

  for (size_t v = 0; v < nv; ++v)
    if (mp.group_of[v] >= 0) {
      TensorSlot s;
      s.offset_in_group = offset_in_group[v];
      s.value = static_cast<int>(v);
      s.group = mp.group_of[v];
      s.bytes = value_bytes(g, storage, v);
      mp.slots.push_back(s);
      mp.naive_bytes += align_up(std::max<size_t>(s.bytes, 1), mp.alignment);
    }

  place_groups(mp, max_arena);
  return mp;
}

std::string check_memory_plan(const MemoryPlan& mp) {
  for (auto& s : mp.slots) {
    const StorageGroup& grp = mp.groups[s.group];
    if (s.offset_in_group + s.bytes > std::max<size_t>(grp.bytes, 1) || s.offset_in_group % mp.alignment)
      return "tensor " + std::to_string(s.value) + " does not fit its group";
  }
  for (size_t i = 0; i < mp.groups.size(); ++i) {
    const StorageGroup& a = mp.groups[i];
    if (a.values.empty()) continue;
    if (a.offset % mp.alignment) return "group " + std::to_string(i) + " is misaligned";
    if (a.arena < 0 || static_cast<size_t>(a.arena) >= mp.arena_sizes.size() ||
        a.offset + a.bytes > mp.arena_sizes[a.arena])
      return "group " + std::to_string(i) + " runs past its arena";
    for (size_t j = i + 1; j < mp.groups.size(); ++j) {
      const StorageGroup& b = mp.groups[j];
      if (b.values.empty()) continue;
      bool time = a.first <= b.last && b.first <= a.last && a.arena == b.arena;
      bool space = a.offset < b.offset + std::max<size_t>(b.bytes, 1) &&
                   b.offset < a.offset + std::max<size_t>(a.bytes, 1);
      if (time && space)
        return "groups " + std::to_string(i) + " and " + std::to_string(j) +
               " are live at the same time and overlap in memory";
    }
  }
  return "";
}

}  // namespace oi
