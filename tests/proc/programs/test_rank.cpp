// A tiny rank program whose behaviour is chosen by argv, so the process layer and the launcher
// are tested against real exits, signals, hangs, floods and grandchildren.
//
//   exit N                 print a line to stdout and an error line to stderr (N != 0), exit N
//   signal NAME            print a line, then raise NAME (SEGV, ABRT, ...)
//   hang-before            print "starting", then hang before any rendezvous line
//   hang-after             print "rendezvous", then hang
//   ignore-term            ignore SIGTERM, print "ready", hang
//   flood MB               write MB megabytes to stdout, "flood done" to stderr, exit 0
//   grandchild [hang] [session]
//                          fork a child that hangs (in a session of its own with `session`),
//                          print "grandchild <pid>", exit 0 (or hang)
//   env NAME...            print NAME=value for each variable, and cwd=<dir>
//   pdeathsig              print the parent-death signal number
//   train STEPS [nan-at K] [hang-at K] [no-pg] [exit N] [log-file PATH] [step-ms MS]
//         [first-step-ms MS] [eval-at K eval-ms MS]
//                          bigmac-log v1 lines with real `t`: run, pg_ready, step/heartbeat per
//                          step (each step takes MS, step 0 first-step-ms; before step K an
//                          announced evaluation of eval-ms), done; to PATH instead of stdout when
//                          given (as bigmac-train --log-file)
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void hang() {
  for (;;) pause();
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void sleep_ms(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int train(int argc, char** argv) {
  int steps = std::atoi(argv[2]);
  int nan_at = -1;
  int hang_at = -2;
  int exit_code = 0;
  int step_ms = 0;
  int first_step_ms = -1;
  int eval_at = -1;
  int eval_ms = 0;
  int linger_ms = 0;
  long flood_mb = 0;
  bool pg = true;
  std::FILE* log = stdout;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "nan-at" && i + 1 < argc) nan_at = std::atoi(argv[++i]);
    if (a == "hang-at" && i + 1 < argc) hang_at = std::atoi(argv[++i]);
    if (a == "exit" && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    if (a == "step-ms" && i + 1 < argc) step_ms = std::atoi(argv[++i]);
    if (a == "first-step-ms" && i + 1 < argc) first_step_ms = std::atoi(argv[++i]);
    if (a == "eval-at" && i + 1 < argc) eval_at = std::atoi(argv[++i]);
    if (a == "eval-ms" && i + 1 < argc) eval_ms = std::atoi(argv[++i]);
    if (a == "linger-ms" && i + 1 < argc) linger_ms = std::atoi(argv[++i]);
    if (a == "flood-mb" && i + 1 < argc) flood_mb = std::atol(argv[++i]);
    if (a == "no-pg") pg = false;
    if (a == "log-file" && i + 1 < argc) log = std::fopen(argv[++i], "w");
  }
  if (log == nullptr) return 4;
  int rank = env_int("RANK", 0);
  int world = env_int("WORLD_SIZE", 1);
  std::fprintf(log, "{\"ev\":\"run\",\"rank\":%d,\"t\":%.6f,\"world_size\":%d,\"local_rank\":%d}\n",
               rank, now_s(), world, env_int("LOCAL_RANK", 0));
  std::fflush(log);
  if (hang_at == -1) hang();
  if (pg) {
    std::fprintf(log, "{\"ev\":\"pg_ready\",\"rank\":%d,\"t\":%.6f,\"world_size\":%d}\n", rank,
                 now_s(), world);
  }
  if (flood_mb > 0) {
    // Valid lines as fast as the rank can write them before its steps (NCCL_DEBUG=INFO, a
    // verbose data loader, tensors printed each step): each carries its own time.
    std::setvbuf(log, nullptr, _IOFBF, 1 << 20);
    const std::string pad(160, 'x');
    const long total = flood_mb << 20;
    for (long written = 0; written < total;) {
      written += std::fprintf(log, "{\"ev\":\"trace\",\"rank\":%d,\"t\":%.6f,\"detail\":\"%s\"}\n",
                              rank, now_s(), pad.c_str());
    }
    std::fflush(log);
  }
  for (int s = 0; s < steps; ++s) {
    if (s == hang_at) {
      std::fflush(log);
      hang();
    }
    if (s == eval_at) {
      // An evaluation between steps: announced, silent for eval_ms, then ended.
      std::fprintf(
          log, "{\"ev\":\"eval\",\"rank\":%d,\"t\":%.6f,\"global_step\":%d,\"phase\":\"start\"}\n",
          rank, now_s(), s);
      std::fflush(log);
      sleep_ms(eval_ms);
      std::fprintf(
          log, "{\"ev\":\"eval\",\"rank\":%d,\"t\":%.6f,\"global_step\":%d,\"phase\":\"end\"}\n",
          rank, now_s(), s);
    }
    const int ms = s == 0 && first_step_ms >= 0 ? first_step_ms : step_ms;
    if (ms > 0) {
      std::fflush(log);
      sleep_ms(ms);
    }
    const double t = now_s();
    if (s == nan_at) {
      std::fprintf(log,
                   "{\"ev\":\"step\",\"rank\":%d,\"t\":%.6f,\"global_step\":%d,\"loss\":NaN}\n",
                   rank, t, s);
    } else {
      std::fprintf(log,
                   "{\"ev\":\"step\",\"rank\":%d,\"t\":%.6f,\"global_step\":%d,\"loss\":%.3f,"
                   "\"step_ms\":%d}\n",
                   rank, t, s, 4.0 / (1 + s), ms);
    }
    std::fprintf(log, "{\"ev\":\"heartbeat\",\"rank\":%d,\"t\":%.6f,\"global_step\":%d}\n", rank, t,
                 s);
    std::fflush(log);
  }
  if (exit_code != 0) {
    std::fprintf(stderr, "RuntimeError: rank %d failed on purpose\n", rank);
    return exit_code;
  }
  std::fprintf(log, "{\"ev\":\"done\",\"rank\":%d,\"t\":%.6f,\"steps\":%d}\n", rank, now_s(),
               steps);
  // Quiet after `done`, as a trainer flushing a checkpoint or tearing down NCCL is.
  if (linger_ms > 0) {
    std::fflush(log);
    sleep_ms(linger_ms);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bigmac-test-rank MODE [ARGS]\n");
    return 2;
  }
  std::string mode = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (mode == "exit" && argc > 2) {
    int code = std::atoi(argv[2]);
    std::printf("hello from rank %d\n", env_int("RANK", 0));
    if (code != 0) std::fprintf(stderr, "warning: about to fail\nerror: failing with %d\n", code);
    return code;
  }
  if (mode == "signal" && argc > 2) {
    std::string name = argv[2];
    int sig = name == "SEGV"   ? SIGSEGV
              : name == "ABRT" ? SIGABRT
              : name == "BUS"  ? SIGBUS
                               : SIGKILL;
    std::printf("about to raise %s\n", argv[2]);
    std::fflush(stdout);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return 99;
  }
  if (mode == "hang-before") {
    std::printf("starting\n");
    hang();
  }
  if (mode == "hang-after") {
    std::printf("rendezvous\n");
    hang();
  }
  if (mode == "ignore-term") {
    std::signal(SIGTERM, SIG_IGN);
    std::printf("ready\n");
    hang();
  }
  if (mode == "flood" && argc > 2) {
    long total = std::atol(argv[2]) * 1024L * 1024L;
    std::string line(127, 'x');
    line.push_back('\n');
    std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16);
    for (long written = 0; written < total; written += 128)
      std::fwrite(line.data(), 1, 128, stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "flood done\n");
    return 0;
  }
  if (mode == "grandchild") {
    bool hangs = false, session = false;
    for (int i = 2; i < argc; ++i) {
      hangs |= std::string(argv[i]) == "hang";
      session |= std::string(argv[i]) == "session";
    }
    pid_t pid = fork();
    if (pid == 0) {
      // Out of the rank's process group and session, as torch 2's elastic agent starts workers.
      if (session) setsid();
      hang();
    }
    std::printf("grandchild %d\n", static_cast<int>(pid));
    std::fflush(stdout);
    if (hangs) hang();
    return 0;
  }
  if (mode == "env") {
    for (int i = 2; i < argc; ++i) {
      const char* v = std::getenv(argv[i]);
      std::printf("%s=%s\n", argv[i], v ? v : "<unset>");
    }
    char dir[4096];
    std::printf("cwd=%s\n", getcwd(dir, sizeof dir) ? dir : "?");
    return 0;
  }
  if (mode == "pdeathsig") {
    int sig = 0;
    prctl(PR_GET_PDEATHSIG, &sig);
    std::printf("pdeathsig=%d\n", sig);
    return 0;
  }
  if (mode == "train" && argc > 2) return train(argc, argv);
  std::fprintf(stderr, "bigmac-test-rank: unknown mode %s\n", mode.c_str());
  return 2;
}
