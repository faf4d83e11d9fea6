/* LD_PRELOAD shim for crash reports on machines without a debugger: on SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL or SIGABRT it prints the faulting thread's stack (glibc's backtrace) to stderr, then lets
 * the signal kill the process as before. Built by tools/gpu_bundle.sh:
 *   cc -shared -fPIC -O1 -o segv_trace.so tools/segv_trace.c
 *   LD_PRELOAD=segv_trace.so PROGRAM ...                                                        */
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void report(int sig, siginfo_t* info, void* ctx) {
  (void)ctx;
  void* frames[64];
  char line[96];
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                     : sig == SIGILL ? "SIGILL" : "SIGABRT";
  int n = 0;
  for (const char* p = "\n*** segv_trace: "; *p; ++p) line[n++] = *p;
  for (const char* p = name; *p; ++p) line[n++] = *p;
  line[n++] = ' ';
  unsigned long a = (unsigned long)info->si_addr;
  line[n++] = '0', line[n++] = 'x';
  for (int s = 60; s >= 0; s -= 4) line[n++] = "0123456789abcdef"[(a >> s) & 15];
  line[n++] = '\n';
  write(2, line, (size_t)n);
  const int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  static char stack[1 << 16];
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = stack;
  ss.ss_size = sizeof stack;
  sigaltstack(&ss, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = report;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (unsigned i = 0; i < sizeof sigs / sizeof *sigs; ++i) sigaction(sigs[i], &sa, 0);
}
