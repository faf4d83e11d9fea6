#include "tools/profile_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace cli {

using ocl_infer::LayerProfile;

namespace {

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? sep : "") + v[i];
  return r;
}

std::string dims(const std::vector<size_t>& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? "x" : "") + std::to_string(v[i]);
  return r.empty() ? "auto" : r;
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      r += b;
    } else r += c;
  }
  return r;
}

namespace {

std::string esc(const std::string& s) { return json_escape(s); }

std::string html_esc(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '<') r += "&lt;";
    else if (c == '>') r += "&gt;";
    else if (c == '&') r += "&amp;";
    else if (c == '"') r += "&quot;";
    else r += c;
  }
  return r;
}

std::string num(double v, int prec = 3) {
  if (!std::isfinite(v)) return "0";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", \"" : "\"") + esc(v[i]) + "\"";
  return r + "]";
}

template <typename T>
std::string json_ints(const std::vector<T>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

// "first_node (+3 fused)" for labels; the first covered node names a fused kernel best.
std::string short_name(const LayerProfile& l) {
  std::string name = l.node_names.empty() ? "?" : l.node_names[0];
  if (name.size() > 40) name = "..." + name.substr(name.size() - 37);
  if (l.node_names.size() > 1) name += " (+" + std::to_string(l.node_names.size() - 1) + " fused)";
  return name;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<std::pair<std::string, double>> time_by_op_type(const std::vector<LayerProfile>& layers) {
  std::map<std::string, double> m;
  for (auto& l : layers) m[join(l.op_types, "+")] += l.avg_us;
  std::vector<std::pair<std::string, double>> r(m.begin(), m.end());
  std::sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return r;
}

ProfileSummary summarize(const ocl_infer::Session& session, const std::string& model, int iterations,
                         int warmup, double first_inference_ms) {
  ProfileSummary s;
  s.model = model;
  s.device = session.device().name;
  s.iterations = iterations;
  s.warmup = warmup;
  for (auto& l : session.profile()) s.kernel_sum_us += l.avg_us;
  s.device_us = median(session.profiled_inference_us());
  s.wall_us = median(session.profiled_wall_us());
  auto wall = session.profiled_wall_us(), sums = session.profiled_kernel_sum_us();
  std::vector<double> host;
  for (size_t i = 0; i < wall.size() && i < sums.size(); ++i) host.push_back(wall[i] - sums[i]);
  s.host_us = median(host);
  s.startup = session.stats();
  s.first_inference_ms = first_inference_ms;
  return s;
}

std::string format_profile_table(const std::vector<LayerProfile>& layers, const ProfileSummary& s,
                                 bool execution_order) {
  std::vector<const LayerProfile*> rows;
  for (auto& l : layers) rows.push_back(&l);
  if (!execution_order)
    std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->avg_us > b->avg_us; });
  const double total = std::max(s.kernel_sum_us, 1e-9);
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-34s %-22s %-18s %-40s %10s %10s %6s %8s %8s  %s\n", "#",
                "node", "op", "output", "kernel [global/local]", "avg us", "min us", "%", "GFLOP/s",
                "GB/s", "variant");
  os << line;
  int bad = 0;
  for (auto* l : rows) {
    std::string name = join(l->node_names, "+"), op = join(l->op_types, "+");
    if (name.size() > 34) name = name.substr(0, 31) + "...";
    if (op.size() > 22) op = op.substr(0, 19) + "...";
    std::string kern = l->kernel + " [" + dims(l->global) + "/" + dims(l->local) + "]";
    if (l->launches > 1) kern = l->kernel + " x" + std::to_string(l->launches) + " [" + dims(l->global) + "]";
    if (kern.size() > 40) kern = kern.substr(0, 37) + "...";
    double gflops = l->avg_us > 0 ? l->flops / (l->avg_us * 1e3) : 0;
    double gbs = l->avg_us > 0 ? l->bytes / (l->avg_us * 1e3) : 0;
    // "(tuned)" / "(forced)" when the choice did not come from the device-class heuristic.
    std::string variant = l->variant.empty() ? "-" : l->variant;
    if (!l->variant.empty() && (l->variant_source == "tuned" || l->variant_source == "forced"))
      variant += " (" + l->variant_source + ")";
    if (variant.size() > 60) variant = variant.substr(0, 57) + "...";
    std::snprintf(line, sizeof line, "%4d  %-34s %-22s %-18s %-40s %10.1f %10.1f %6.2f %8s %8s  %s%s\n",
                  l->index, name.c_str(), op.c_str(),
                  ocl_infer::shape_to_string(l->output_shape).c_str(), kern.c_str(), l->avg_us,
                  l->min_us, 100.0 * l->avg_us / total, l->flops > 0 ? num(gflops, 1).c_str() : "-",
                  l->bytes > 0 ? num(gbs, 2).c_str() : "-", variant.c_str(),
                  l->timestamp_problem.empty() ? "" : ("  !! " + l->timestamp_problem).c_str());
    os << line;
    bad += !l->timestamp_problem.empty();
  }
  os << "\n";
  int launches = 0;
  for (auto& l : layers) launches += l.launches;
  os << "kernels: " << launches << " launches in " << layers.size() << " rows, sum of averages "
     << num(s.kernel_sum_us / 1000) << " ms\n";
  os << "device time per inference (median): " << num(s.device_us / 1000) << " ms\n";
  os << "wall-clock per inference (median):  " << num(s.wall_us / 1000) << " ms\n";
  os << "host overhead (wall - kernels):     " << num(s.host_us / 1000) << " ms (median over runs)\n";
  os << "device: " << s.device << "; precision " << s.precision << "; keep-warm "
     << (s.startup.keep_warm_spin ? std::string("spinner")
         : s.startup.keep_warm    ? std::to_string(s.startup.keep_warm) + " markers"
                                  : std::string("off"))
     << "; " << s.iterations
     << " iterations after " << s.warmup << " warm-up\n";
  if (bad)
    os << "WARNING: " << bad << " launches had implausible event timestamps (marked !!); their times are not reliable\n";
  os << "by op type:";
  for (auto& [op, us] : time_by_op_type(layers)) os << "  " << op << " " << num(100.0 * us / total, 1) << " %";
  os << "\n";
  os << "start-up: load " << num(s.startup.load_ms, 1) << " ms, plan " << num(s.startup.plan_ms, 1)
     << " ms (graph " << num(s.startup.graph_ms, 1) << " ms, lowering " << num(s.startup.lower_ms, 1)
     << " ms incl. weight upload " << num(s.startup.upload_ms, 1) << " ms, programs "
     << num(s.startup.programs_ms, 1) << " ms; kernel compilation " << num(s.startup.compile_ms, 1) << " ms: " << s.startup.programs_built
     << " programs built, " << s.startup.programs_cached << " from cache), first inference "
     << num(s.first_inference_ms, 1) << " ms\n";
  return os.str();
}

std::string profile_json(const std::vector<LayerProfile>& layers, const ProfileSummary& s) {
  std::ostringstream os;
  os << "{\n  \"schema\": \"ocl-infer-profile-1\",\n  \"model\": \"" << esc(s.model) << "\",\n  \"device\": \""
     << esc(s.device) << "\",\n  \"precision\": \"" << s.precision << "\",\n  \"keep_warm\": " << s.startup.keep_warm
     << ",\n  \"keep_warm_spin\": " << (s.startup.keep_warm_spin ? "true" : "false")
     << ",\n  \"iterations\": " << s.iterations << ",\n  \"warmup\": " << s.warmup
     << ",\n  \"kernel_sum_us\": " << num(s.kernel_sum_us) << ",\n  \"device_us\": " << num(s.device_us)
     << ",\n  \"wall_us\": " << num(s.wall_us) << ",\n  \"host_overhead_us\": " << num(s.host_us) << ",\n  \"startup\": {\"load_ms\": " << num(s.startup.load_ms)
     << ", \"plan_ms\": " << num(s.startup.plan_ms) << ", \"graph_ms\": " << num(s.startup.graph_ms)
     << ", \"lower_ms\": " << num(s.startup.lower_ms) << ", \"upload_ms\": " << num(s.startup.upload_ms)
     << ", \"programs_ms\": " << num(s.startup.programs_ms) << ", \"compile_ms\": " << num(s.startup.compile_ms)
     << ", \"programs_built\": " << s.startup.programs_built << ", \"programs_cached\": "
     << s.startup.programs_cached << ", \"first_inference_ms\": " << num(s.first_inference_ms) << "},\n  \"launches\": [";
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    os << (i ? ",\n" : "\n") << "    {\"index\": " << l.index << ", \"nodes\": " << json_strings(l.node_names)
       << ", \"op_types\": " << json_strings(l.op_types) << ", \"output_shape\": " << json_ints(l.output_shape)
       << ", \"kernel\": \"" << esc(l.kernel) << "\", \"variant\": "
       << (l.variant.empty() ? "null" : "\"" + esc(l.variant) + "\"") << ", \"variant_source\": "
       << (l.variant_source.empty() ? "null" : "\"" + esc(l.variant_source) + "\"") << ", \"global\": " << json_ints(l.global)
       << ", \"local\": " << json_ints(l.local) << ", \"runs\": " << l.runs << ", \"avg_us\": " << num(l.avg_us)
       << ", \"min_us\": " << num(l.min_us) << ", \"max_us\": " << num(l.max_us)
       << ", \"start_us\": " << num(l.start_us) << ", \"launches\": " << l.launches << ", \"flops\": " << num(l.flops, 0)
       << ", \"bytes\": " << num(l.bytes, 0) << ", \"timestamp_problem\": "
       << (l.timestamp_problem.empty() ? "null" : "\"" + esc(l.timestamp_problem) + "\"") << "}";
  }
  os << "\n  ]\n}\n";
  return os.str();
}

std::string profile_csv(const std::vector<LayerProfile>& layers) {
  std::ostringstream os;
  os << "index,nodes,op_types,output_shape,kernel,global,local,runs,avg_us,min_us,max_us,flops,bytes,timestamp_problem,"
        "variant,launches\n";
  auto q = [](const std::string& v) {
    std::string r = "\"";
    for (char c : v) r += c == '"' ? std::string("\"\"") : std::string(1, c);
    return r + "\"";
  };
  for (auto& l : layers)
    os << l.index << "," << q(join(l.node_names, "+")) << "," << q(join(l.op_types, "+")) << ","
       << q(ocl_infer::shape_to_string(l.output_shape)) << "," << q(l.kernel) << "," << q(dims(l.global))
       << "," << q(dims(l.local)) << "," << l.runs << "," << num(l.avg_us) << "," << num(l.min_us) << ","
       << num(l.max_us) << "," << num(l.flops, 0) << "," << num(l.bytes, 0) << "," << q(l.timestamp_problem) << ","
       << q(l.variant) << "," << l.launches << "\n";
  return os.str();
}

std::string profile_trace(const std::vector<LayerProfile>& layers, const ProfileSummary& s) {
  // Chrome trace-event format ("X" complete events, microseconds), one track for the queue.
  std::ostringstream os;
  os << "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"model\": \"" << esc(s.model) << "\", \"device\": \""
     << esc(s.device) << "\"}, \"traceEvents\": [\n";
  os << "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"" << esc(s.device) << "\"}},\n";
  os << "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"in-order queue\"}}";
  for (auto& l : layers)
    os << ",\n  {\"name\": \"" << esc(join(l.node_names, "+")) << "\", \"cat\": \"" << esc(join(l.op_types, "+"))
       << "\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": " << num(l.start_us) << ", \"dur\": " << num(l.last_us)
       << ", \"args\": {\"kernel\": \"" << esc(l.kernel) << "\", \"avg_us\": " << num(l.avg_us) << ", \"output_shape\": \""
       << ocl_infer::shape_to_string(l.output_shape) << "\", \"min_us\": " << num(l.min_us)
       << ", \"flops\": " << num(l.flops, 0) << ", \"bytes\": " << num(l.bytes, 0) << "}}";
  os << "\n]}\n";
  return os.str();
}

std::string profile_html(const std::vector<LayerProfile>& layers, const ProfileSummary& s) {
  // One page, no scripts from the network: inline SVG bars for the top layers and a timeline.
  std::vector<const LayerProfile*> top;
  for (auto& l : layers) top.push_back(&l);
  std::stable_sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->avg_us > b->avg_us; });
  if (top.size() > 25) top.resize(25);
  const double total = std::max(s.kernel_sum_us, 1e-9);
  const double maxv = top.empty() ? 1 : std::max(top[0]->avg_us, 1e-9);
  auto ops = time_by_op_type(layers);
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  std::map<std::string, std::string> color;
  for (size_t i = 0; i < ops.size(); ++i) color[ops[i].first] = palette[std::min<size_t>(i, 9)];

  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ocl-infer profile: " << html_esc(s.model)
     << "</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
        "h1{font-size:20px}h2{font-size:16px;margin-top:28px}table{border-collapse:collapse;font-size:13px}"
        "td,th{padding:3px 8px;text-align:right;border-bottom:1px solid #ddd}td.l,th.l{text-align:left}"
        ".k{color:#666;font-size:12px}.legend span{display:inline-block;margin-right:14px;font-size:13px}"
        ".sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:middle}"
        "td.n{max-width:420px;overflow-wrap:anywhere}.f{color:#777;font-size:11px}</style>"
        "</head><body>\n";
  os << "<h1>ocl-infer profile: " << html_esc(s.model) << "</h1>\n";
  os << "<p>Device <b>" << html_esc(s.device) << "</b>; " << s.iterations << " iterations after " << s.warmup
     << " warm-up. Device time per inference <b>" << num(s.device_us / 1000) << " ms</b> (median), wall-clock <b>"
     << num(s.wall_us / 1000) << " ms</b>, sum of kernel averages " << num(s.kernel_sum_us / 1000) << " ms, "
     << layers.size() << " kernel launches.</p>\n";
  os << "<h2>Time by operator type</h2>\n<div class=\"legend\">";
  for (auto& [op, us] : ops)
    os << "<span><i class=\"sw\" style=\"background:" << color[op] << "\"></i>" << html_esc(op) << " "
       << num(100 * us / total, 1) << " %</span>";
  os << "</div>\n";
  // Stacked share bar.
  os << "<svg width=\"1000\" height=\"24\" role=\"img\">";
  double x = 0;
  for (auto& [op, us] : ops) {
    double w = 1000 * us / total;
    os << "<rect x=\"" << num(x, 1) << "\" y=\"2\" width=\"" << num(w, 1) << "\" height=\"20\" fill=\"" << color[op]
       << "\"><title>" << html_esc(op) << ": " << num(us / 1000) << " ms</title></rect>";
    x += w;
  }
  os << "</svg>\n";
  os << "<h2>Slowest " << top.size() << " kernels (average time per inference)</h2>\n";
  const int bar_h = 18, label_w = 380, chart_w = 520;
  os << "<svg width=\"" << label_w + chart_w + 140 << "\" height=\"" << top.size() * (bar_h + 4) + 4 << "\" role=\"img\">";
  for (size_t i = 0; i < top.size(); ++i) {
    auto* l = top[i];
    std::string name = short_name(*l);
    double w = chart_w * l->avg_us / maxv;
    int y = static_cast<int>(i) * (bar_h + 4) + 2;
    std::string op = join(l->op_types, "+");
    os << "<text x=\"" << label_w - 6 << "\" y=\"" << y + 13 << "\" font-size=\"12\" text-anchor=\"end\">"
       << html_esc(name) << "</text><rect x=\"" << label_w << "\" y=\"" << y << "\" width=\"" << num(std::max(w, 1.0), 1)
       << "\" height=\"" << bar_h << "\" fill=\"" << color[op] << "\"><title>" << html_esc(op) << " "
       << html_esc(l->kernel) << "</title></rect><text x=\"" << label_w + std::max(w, 1.0) + 6 << "\" y=\"" << y + 13
       << "\" font-size=\"12\">" << num(l->avg_us / 1000) << " ms (" << num(100 * l->avg_us / total, 1) << " %)</text>";
  }
  os << "</svg>\n";
  // Timeline of the last inference: real start offsets and durations, so idle gaps between
  // kernels show as they happened.
  double span = 1e-9;
  for (auto& l : layers) span = std::max(span, l.start_us + l.last_us);
  os << "<h2>Timeline of the last inference (" << num(span / 1000)
     << " ms; gaps are time the device sat idle between kernels; hover for names)</h2>\n";
  os << "<svg width=\"1000\" height=\"46\" role=\"img\"><rect x=\"0\" y=\"4\" width=\"1000\" height=\"24\" fill=\"#f4f4f4\"/>";
  for (auto& l : layers) {
    std::string op = join(l.op_types, "+");
    os << "<rect x=\"" << num(1000 * l.start_us / span, 2) << "\" y=\"4\" width=\"" << num(std::max(1000 * l.last_us / span, 0.5), 2)
       << "\" height=\"24\" fill=\"" << color[op] << "\"><title>#" << l.index << " " << html_esc(join(l.node_names, "+"))
       << " (" << html_esc(op) << ") " << num(l.last_us / 1000) << " ms</title></rect>";
  }
  os << "<text x=\"0\" y=\"42\" font-size=\"11\">0 ms</text><text x=\"1000\" y=\"42\" font-size=\"11\" text-anchor=\"end\">"
     << num(span / 1000) << " ms</text></svg>\n";
  os << "<h2>All kernels in execution order</h2>\n<table><tr><th>#</th><th class=\"l\">node</th><th class=\"l\">op</th>"
        "<th class=\"l\">output</th><th class=\"l\">kernel</th><th>avg ms</th><th>min ms</th><th>%</th><th>GFLOP/s</th><th>GB/s</th></tr>\n";
  for (auto& l : layers) {
    std::vector<std::string> rest(l.node_names.begin() + std::min<size_t>(1, l.node_names.size()), l.node_names.end());
    os << "<tr><td>" << l.index << "</td><td class=\"l n\">" << html_esc(l.node_names.empty() ? "" : l.node_names[0])
       << (rest.empty() ? "" : "<br><span class=\"f\">+ " + html_esc(join(rest, ", ")) + "</span>") << "</td><td class=\"l\">"
       << html_esc(join(l.op_types, "+")) << "</td><td class=\"l\">" << ocl_infer::shape_to_string(l.output_shape)
       << "</td><td class=\"l k\">" << html_esc(l.kernel) << "</td><td>" << num(l.avg_us / 1000) << "</td><td>"
       << num(l.min_us / 1000) << "</td><td>" << num(100 * l.avg_us / total, 1) << "</td><td>"
       << (l.flops > 0 && l.avg_us > 0 ? num(l.flops / (l.avg_us * 1e3), 1) : "-") << "</td><td>"
       << (l.bytes > 0 && l.avg_us > 0 ? num(l.bytes / (l.avg_us * 1e3), 2) : "-") << "</td></tr>\n";
  }
  os << "</table>\n<p class=\"k\">Start-up: load " << num(s.startup.load_ms, 1) << " ms, plan " << num(s.startup.plan_ms, 1)
     << " ms (compilation " << num(s.startup.compile_ms, 1) << " ms, " << s.startup.programs_built << " built, "
     << s.startup.programs_cached << " cached), first inference " << num(s.first_inference_ms, 1)
     << " ms. Precision " << s.precision << ".</p>\n";
  os << "</body></html>\n";
  return os.str();
}

}  // namespace cli
