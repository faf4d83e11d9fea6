#include "runtime/backend/program_bundle.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>

#include "ocl_infer/ocl_infer.hpp"

namespace oi {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

struct Token {
  std::string text;
  bool ident;
};

// Tokens that may sit before a parenthesised group without naming a function.
bool is_attribute_word(const std::string& s) { return s == "__attribute__" || s == "attribute"; }

bool is_aggregate_word(const std::string& s) { return s == "struct" || s == "union" || s == "enum"; }

// The name a file-scope declaration or definition introduces; "" when there is none.
std::string declared_name(const std::vector<Token>& stmt, const std::set<std::string>& macros) {
  // A function: the identifier before the last parenthesised group that is not an attribute's and
  // not a function-like macro's (a return type such as STORE_TYPE(YS)).
  std::string fn;
  int depth = 0;
  for (size_t i = 0; i < stmt.size(); ++i) {
    const std::string& t = stmt[i].text;
    if (t == "=" && depth == 0) break;  // an initializer: handled below
    if (t == "(") {
      if (depth == 0 && i > 0 && stmt[i - 1].ident && !is_attribute_word(stmt[i - 1].text) &&
          !macros.count(stmt[i - 1].text))
        fn = stmt[i - 1].text;
      ++depth;
    } else if (t == ")") {
      --depth;
    }
  }
  if (!fn.empty()) return fn;
  // A variable or typedef: the last identifier at bracket depth 0 before an initializer (not an
  // attribute's: typedef __fp16 h2 __attribute__((ext_vector_type(2)))).
  std::string last;
  depth = 0;
  for (const Token& tk : stmt) {
    if (tk.text == "=" && depth == 0) break;
    if (tk.text == "[" || tk.text == "(") ++depth;
    else if (tk.text == "]" || tk.text == ")") --depth;
    else if (tk.ident && depth == 0 && !macros.count(tk.text) && !is_attribute_word(tk.text)) last = tk.text;
  }
  return last;
}

}  // namespace

bool has_unoptimized_flag(const std::string& options) {
  const std::string_view flag(kUnoptimizedFlag);
  return options.size() >= flag.size() && options.compare(options.size() - flag.size(), flag.size(), flag) == 0;
}

std::string without_unoptimized_flag(const std::string& options) {
  return has_unoptimized_flag(options) ? options.substr(0, options.size() - std::string_view(kUnoptimizedFlag).size())
                                       : options;
}

std::vector<bool> pick_unoptimized(const std::vector<UnoptimizedCandidate>& launches, const DeviceCaps& caps) {
  std::vector<bool> pick(launches.size(), false);
  if (const char* e = std::getenv("OCL_INFER_FIRST_RUN_UNOPTIMIZED"); e && std::string(e) == "0") return pick;
  if (!caps.is_cpu()) return pick;
  constexpr double kSlowdown = 16, kProgramMs = 150, kPlanMs = 500;
  constexpr size_t kMinPrograms = 6;
  // Guessed rates of the optimised kernels: 4 GFLOP/s a float lane (the Xeon's 32 lanes ran
  // resnet18's convs at 250-300 GFLOP/s; the guess says 128) and 8 GB/s a compute unit.
  const double units = std::max<uint32_t>(1, caps.compute_units);
  const double flops_per_ms = units * std::max<uint32_t>(1, caps.native_vector_width_float) * 4e6,
               bytes_per_ms = units * 8e6;
  // Guessed slowdown and members, by program.
  std::map<std::string, std::pair<double, std::vector<size_t>>> programs;
  for (size_t i = 0; i < launches.size(); ++i) {
    const UnoptimizedCandidate& l = launches[i];
    if (!l.eligible) continue;
    auto& p = programs[l.program];
    p.first += kSlowdown * (l.flops / flops_per_ms + l.bytes / bytes_per_ms);
    p.second.push_back(i);
  }
  if (programs.size() < kMinPrograms) return pick;
  std::vector<std::pair<double, const std::vector<size_t>*>> order;
  for (const auto& [key, p] : programs)
    if (p.first <= kProgramMs) order.push_back({p.first, &p.second});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double total = 0;
  for (const auto& [ms, members] : order) {
    if (total + ms > kPlanMs) break;
    total += ms;
    for (size_t i : *members) pick[i] = true;
  }
  return pick;
}

bool parse_define_options(const std::string& options, std::vector<std::pair<std::string, std::string>>* defines) {
  size_t i = 0;
  while (i < options.size()) {
    while (i < options.size() && std::isspace(static_cast<unsigned char>(options[i]))) ++i;
    if (i >= options.size()) break;
    size_t j = i;
    while (j < options.size() && !std::isspace(static_cast<unsigned char>(options[j]))) ++j;
    const std::string opt = options.substr(i, j - i);
    i = j;
    if (opt.size() < 3 || opt.compare(0, 2, "-D") != 0 || !ident_start(opt[2])) return false;
    size_t k = 2;
    while (k < opt.size() && ident_char(opt[k])) ++k;
    const std::string name = opt.substr(2, k - 2);
    if (k == opt.size()) {
      defines->push_back({name, "1"});
    } else if (opt[k] == '=') {
      const std::string value = opt.substr(k + 1);
      if (value.find_first_of("\"'\\") != std::string::npos) return false;
      defines->push_back({name, value});
    } else {
      return false;  // a function-like macro or something else the driver parses its own way
    }
  }
  return true;
}

namespace {

struct FunctionMacro {
  std::vector<std::string> params;
  std::string body;
};

class NameScanner {
 public:
  explicit NameScanner(SourceNames* out) : out_(out) {}

  // Tokens of `src`; directives are read (for their macros) and dropped.
  std::vector<Token> tokenize(const std::string& src) {
    std::vector<Token> tokens;
    size_t i = 0;
    bool line_start = true;
    const size_t n = src.size();
    while (i < n) {
      const char c = src[i];
      if (c == '\n') {
        line_start = true;
        ++i;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (c == '/' && i + 1 < n && src[i + 1] == '/') {
        while (i < n && src[i] != '\n') ++i;
      } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
        const size_t e = src.find("*/", i + 2);
        i = e == std::string::npos ? n : e + 2;
      } else if (c == '#' && line_start) {
        // A directive, with its continuation lines.
        size_t e = i;
        while (e < n && src[e] != '\n') {
          if (src[e] == '\\' && e + 1 < n && src[e + 1] == '\n') ++e;
          ++e;
        }
        directive(src.substr(i + 1, e - i - 1));
        i = e;
      } else if (c == '"' || c == '\'') {
        line_start = false;
        size_t k = i + 1;
        while (k < n && src[k] != c && src[k] != '\n') k += src[k] == '\\' ? 2 : 1;
        i = std::min(n, k + 1);
      } else if (ident_start(c)) {
        line_start = false;
        size_t k = i;
        while (k < n && ident_char(src[k])) ++k;
        tokens.push_back({src.substr(i, k - i), true});
        i = k;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
        line_start = false;
        size_t k = i;
        while (k < n && (ident_char(src[k]) || src[k] == '.')) ++k;
        tokens.push_back({src.substr(i, k - i), false});
        i = k;
      } else {
        line_start = false;
        if (c == '#' && i + 1 < n && src[i + 1] == '#') {
          tokens.push_back({"##", false});
          i += 2;
        } else {
          tokens.push_back({std::string(1, c), false});
          ++i;
        }
      }
    }
    return tokens;
  }

  // File-scope declarations: statements at brace depth 0, ended by ';' or by a function body.
  // Braces that open an aggregate body or an initializer belong to the statement. A function-like
  // macro invoked at file scope (a generator of helper functions) is expanded and scanned.
  void declarations(const std::vector<Token>& tokens, int depth_left) {
    std::vector<Token> stmt;
    int brace = 0;
    bool body_is_function = false;
    for (size_t t = 0; t < tokens.size(); ++t) {
      const Token& tk = tokens[t];
      if (brace > 0) {
        if (tk.text == "{") ++brace;
        else if (tk.text == "}" && --brace == 0 && body_is_function) stmt.clear();
        continue;
      }
      if (tk.ident && t + 1 < tokens.size() && tokens[t + 1].text == "(" && fn_macros_.count(tk.text) &&
          depth_left > 0) {
        std::vector<std::string> args;
        size_t e = t + 2;
        int d = 1;
        std::string cur;
        for (; e < tokens.size() && d > 0; ++e) {
          const std::string& x = tokens[e].text;
          if (x == "(") ++d;
          if (x == ")" && --d == 0) break;
          if (x == "," && d == 1) {
            args.push_back(cur);
            cur.clear();
            continue;
          }
          if (!cur.empty()) cur += ' ';
          cur += x;
        }
        if (!cur.empty() || !args.empty()) args.push_back(cur);
        declarations(tokenize(expand(fn_macros_.at(tk.text), args)), depth_left - 1);
        t = e;  // the closing parenthesis
        continue;
      }
      if (tk.text == "{") {
        const bool init = std::any_of(stmt.begin(), stmt.end(), [](const Token& s) { return s.text == "="; });
        const bool aggregate =
            !stmt.empty() && (is_aggregate_word(stmt.back().text) ||
                              (stmt.size() >= 2 && is_aggregate_word(stmt[stmt.size() - 2].text)));
        if (aggregate && stmt.back().ident && !is_aggregate_word(stmt.back().text)) add_global(stmt.back().text);
        body_is_function = !init && !aggregate;
        if (body_is_function) add_global(declared_name(stmt, macros_));
        else stmt.push_back({"{}", false});  // the statement goes on after the braces
        brace = 1;
        continue;
      }
      if (tk.text == ";") {
        add_global(declared_name(stmt, macros_));
        stmt.clear();
        continue;
      }
      stmt.push_back(tk);
    }
  }

 private:
  void directive(const std::string& text) {
    size_t k = 0;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
    if (text.compare(k, 6, "define") != 0) return;
    k += 6;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
    size_t m = k;
    while (m < text.size() && ident_char(text[m])) ++m;
    const std::string name = text.substr(k, m - k);
    if (name.empty()) return;
    if (macros_.insert(name).second) out_->macros.push_back(name);
    if (m < text.size() && text[m] == '(') {
      FunctionMacro fm;
      const size_t close = text.find(')', m);
      if (close == std::string::npos) return;
      std::string p;
      for (size_t q = m + 1; q <= close; ++q) {
        if (text[q] == ',' || q == close) {
          if (!p.empty()) fm.params.push_back(p);
          p.clear();
        } else if (ident_char(text[q])) {
          p += text[q];
        }
      }
      for (size_t q = close + 1; q < text.size(); ++q)
        if (!(text[q] == '\\' && q + 1 < text.size() && text[q + 1] == '\n')) fm.body += text[q];
      fn_macros_[name] = fm;
    }
  }

  // The macro's body with its parameters replaced by `args` and ## applied (nested macros stay).
  static std::string expand(const FunctionMacro& m, const std::vector<std::string>& args) {
    std::string out;
    const std::string& b = m.body;
    bool paste = false;
    for (size_t i = 0; i < b.size();) {
      if (b.compare(i, 2, "##") == 0) {
        while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
        paste = true;
        i += 2;
        continue;
      }
      if (paste && (b[i] == ' ' || b[i] == '\t')) {
        ++i;
        continue;
      }
      paste = false;
      if (ident_start(b[i])) {
        size_t k = i;
        while (k < b.size() && ident_char(b[k])) ++k;
        const std::string id = b.substr(i, k - i);
        auto it = std::find(m.params.begin(), m.params.end(), id);
        out += it != m.params.end() && static_cast<size_t>(it - m.params.begin()) < args.size()
                   ? args[static_cast<size_t>(it - m.params.begin())]
                   : id;
        i = k;
        continue;
      }
      out += b[i++];
    }
    return out;
  }

  void add_global(const std::string& s) {
    if (!s.empty() && globals_.insert(s).second) out_->globals.push_back(s);
  }

  SourceNames* out_;
  std::set<std::string> macros_, globals_;
  std::map<std::string, FunctionMacro> fn_macros_;
};

}  // namespace

SourceNames scan_source_names(const std::string& src) {
  // A model's bundle holds the same file many times (mobilenet_v2: conv.cl 12 times, with other
  // options); the names do not depend on the options, so each source is scanned once a process.
  static std::mutex mu;
  static std::unordered_map<std::string, SourceNames> scanned;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = scanned.find(src); it != scanned.end()) return it->second;
  }
  SourceNames out;
  NameScanner scanner(&out);
  const std::vector<Token> tokens = scanner.tokenize(src);  // reads every macro first
  scanner.declarations(tokens, 4);
  std::lock_guard<std::mutex> lock(mu);
  if (scanned.size() < 256) scanned.emplace(src, out);  // the kernel files, and a few test sources
  return out;
}

std::string bundle_suffix(size_t i) { return "__u" + std::to_string(i); }

std::string bundle_source(const std::vector<BundleUnit>& units) {
  std::string out = "// ocl-infer program bundle: " + std::to_string(units.size()) + " units\n";
  for (size_t u = 0; u < units.size(); ++u) {
    std::vector<std::pair<std::string, std::string>> defines;
    if (!parse_define_options(units[u].options, &defines))
      throw ocl_infer::Error("internal: options '" + units[u].options + "' cannot go into a program bundle");
    const SourceNames names = scan_source_names(units[u].source);
    const std::string suffix = bundle_suffix(u);
    out += "// ---- unit " + std::to_string(u) + ": " + units[u].options + "\n";
    std::set<std::string> undef;
    for (const auto& d : defines) {
      out += "#define " + d.first + " " + d.second + "\n";
      undef.insert(d.first);
    }
    std::set<std::string> macro_set(names.macros.begin(), names.macros.end());
    std::vector<std::string> renamed;
    for (const std::string& g : names.globals) {
      if (macro_set.count(g) || undef.count(g)) continue;
      out += "#define " + g + " " + g + suffix + "\n";
      renamed.push_back(g);
    }
    out += "#line 1\n";
    out += units[u].source;
    if (!out.empty() && out.back() != '\n') out += '\n';
    for (const std::string& m : names.macros) undef.insert(m);
    for (const std::string& g : renamed) undef.insert(g);
    for (const std::string& m : undef) out += "#undef " + m + "\n";
  }
  return out;
}

}  // namespace oi
