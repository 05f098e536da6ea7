// The files around the manifest: an empty manifest, [[model.files]] entries that are not regular
// files (a FIFO, /dev/zero, a folder) or lie outside the manifest's folder, and what
// `--write-manifest` does to the file it replaces (its mode, a symlink in its place).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "manifest/sha256.h"
#include "manifest/writer.h"
#include "infer/errors.h"
#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

// fn's result, "error: <what>" for an InputError, or "timed out" when it does not finish within
// `seconds`: it runs in a child process, so a call that blocks for ever fails the test instead of
// hanging it.
std::string outcome_within(unsigned seconds, const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(seconds);
    std::string result;
    try {
      result = fn();
    } catch (const InputError& e) {
      result = std::string("error: ") + e.what();
    }
    const ssize_t written = write(fds[1], result.data(), result.size());
    _exit(written == static_cast<ssize_t>(result.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string result;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) result.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) return "timed out";
  return result;
}

std::string digest_of(const fs::path& file) {
  return outcome_within(10, [&] { return manifest::sha256_file(file); });
}

// A folder with a FIFO, a folder and links to them and to /dev/zero: what a typo or a hostile
// manifest can name.
struct NotRegular {
  TempDir dir;
  NotRegular() {
    if (mkfifo((dir / "weights.fifo").c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
    fs::create_directory(dir / "weights");
    fs::create_symlink(dir / "weights.fifo", dir / "link-to-fifo");
    fs::create_symlink("/dev/zero", dir / "link-to-zero");
  }
};

TEST(Sha256, RefusesFilesThatAreNotRegularWithoutReadingThem) {
  const NotRegular files;
  const fs::path& d = files.dir.path();
  EXPECT_EQ(digest_of(d / "weights.fifo"),
            "error: " + (d / "weights.fifo").string() + ": is a FIFO, not a regular file");
  EXPECT_EQ(digest_of(d / "link-to-fifo"),
            "error: " + (d / "link-to-fifo").string() + ": is a FIFO, not a regular file");
  EXPECT_EQ(digest_of("/dev/zero"), "error: /dev/zero: is a character device, not a regular file");
  EXPECT_EQ(digest_of(d / "link-to-zero"),
            "error: " + (d / "link-to-zero").string() + ": is a character device, not a regular file");
  EXPECT_EQ(digest_of(d / "weights"), "error: " + (d / "weights").string() + ": is a directory");
}

TEST(Sha256, FollowsSymlinksToRegularFiles) {
  TempDir dir;
  write_file(dir / "abc", "abc");
  fs::create_symlink("abc", dir / "link");
  EXPECT_EQ(digest_of(dir / "link"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// `infer --check --json`, killed after 20 s so that a hang fails the test (exit 124).
ProcessResult check_json(const fs::path& manifest) {
  return run_process("/usr/bin/timeout", {"20", infer_exe(), "--check", "--json", "--manifest", manifest.string()});
}

std::map<std::string, nlohmann::json> rows_of(const ProcessResult& r) {
  std::map<std::string, nlohmann::json> rows;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_object()) {
    for (const auto& row : j["items"]) rows[row["item"].get<std::string>()] = row;
  }
  return rows;
}

std::string model_entry(const std::string& path, const std::string& sha256) {
  return "[[model.files]]\npath = \"" + path + "\"\nsha256 = \"" + sha256 + "\"\n";
}

TEST(CheckModelFiles, AFifoOrADeviceIsAFailingRowNotAHang) {
  const NotRegular files;
  const std::string any(64, 'a');
  write_file(files.dir / "VERSIONS.toml", "schema = 1\n" + model_entry("weights.fifo", any) +
                                              model_entry("/dev/zero", any) + model_entry("weights", any));
  const ProcessResult r = check_json(files.dir / "VERSIONS.toml");
  ASSERT_EQ(r.exit_code, 5) << r.err << r.out;
  std::map<std::string, nlohmann::json> rows = rows_of(r);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"model:weights.fifo", "is a FIFO, not a regular file"},
      {"model:/dev/zero", "is a character device, not a regular file"},
      {"model:weights", "is a directory"}};
  for (const auto& [item, found] : expected) {
    ASSERT_TRUE(rows.count(item)) << item << "\n" << r.out;
    EXPECT_EQ(rows[item]["status"], "FAIL") << item;
    EXPECT_EQ(rows[item]["found"], found) << item;
    EXPECT_EQ(rows[item]["fix"], "list a regular file: [[model.files]] hashes regular files only") << item;
  }
}

// Decided (docs/manifest.md, "[[model.files]]"): a path may leave the manifest's folder. infer runs with the
// user's rights, so the digest of a file the user can read tells nothing sha256sum would not.
TEST(CheckModelFiles, PathsOutsideTheManifestFolderAndSymlinksAreHashed) {
  TempDir dir;
  fs::create_directories(dir / "etc");
  fs::create_directories(dir / "srv" / "model");
  fs::copy_file(test_file("tests/data/golden.safetensors"), dir / "srv" / "model" / "golden.safetensors");
  fs::copy_file(test_file("weights/fashion.toml"), dir / "srv" / "fashion.toml");
  fs::create_symlink("../srv/model/golden.safetensors", dir / "etc" / "linked.safetensors");
  const std::string golden = manifest::sha256_file(dir / "srv" / "model" / "golden.safetensors");
  const std::string toml = manifest::sha256_file(dir / "srv" / "fashion.toml");
  const std::string absolute = (dir / "srv" / "fashion.toml").string();
  write_file(dir / "etc" / "VERSIONS.toml", "schema = 1\n" + model_entry("../srv/model/golden.safetensors", golden) +
                                                model_entry(absolute, toml) +
                                                model_entry("linked.safetensors", golden));
  const ProcessResult r = check_json(dir / "etc" / "VERSIONS.toml");
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  std::map<std::string, nlohmann::json> rows = rows_of(r);
  for (const auto& [item, digest] :
       std::vector<std::pair<std::string, std::string>>{{"model:../srv/model/golden.safetensors", golden},
                                                        {"model:" + absolute, toml},
                                                        {"model:linked.safetensors", golden}}) {
    ASSERT_TRUE(rows.count(item)) << item << "\n" << r.out;
    EXPECT_EQ(rows[item]["status"], "ok") << item;
    EXPECT_EQ(rows[item]["found"], "sha256 " + digest) << item;
  }
}

TEST(CheckManifest, AnEmptyManifestIsAnErrorNamingTheFileAndSchema) {
  TempDir dir;
  for (const std::string& text : {std::string(), std::string("# deployment manifest\n\n   \n")}) {
    write_file(dir / "VERSIONS.toml", text);
    const ProcessResult r = run_process(infer_exe(), {"--check", "--manifest", (dir / "VERSIONS.toml").string()});
    EXPECT_EQ(r.exit_code, 3) << r.out;
    EXPECT_EQ(r.err, "infer: " + (dir / "VERSIONS.toml").string() +
                         ": key 'schema': missing (the file has no keys): every manifest says schema = 1 or 2\n");
    EXPECT_EQ(r.out, "");
  }
}

// Sets the umask for the scope; the tests run in one thread.
class Umask {
 public:
  explicit Umask(mode_t mask) : old_(umask(mask)) {}
  ~Umask() { umask(old_); }
  Umask(const Umask&) = delete;
  Umask& operator=(const Umask&) = delete;

 private:
  mode_t old_;
};

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

const std::string kNewManifest = "schema = 1\n[system]\narch = \"x86_64\"\n";

TEST(WriteManifest, AReplacedFileKeepsItsModeAndANewOneFollowsTheUmask) {
  TempDir dir;
  const fs::path restricted = dir / "VERSIONS.toml";
  write_file(restricted, "schema = 1\n");
  ASSERT_EQ(chmod(restricted.c_str(), 0640), 0);
  {
    const Umask mask(022);
    manifest::write_manifest(restricted, kNewManifest);
    EXPECT_EQ(mode_of(restricted), 0640u);
    EXPECT_EQ(slurp(restricted), kNewManifest);
    manifest::write_manifest(dir / "new.toml", kNewManifest);
    EXPECT_EQ(mode_of(dir / "new.toml"), 0644u);
  }
  {
    const Umask mask(077);
    manifest::write_manifest(dir / "private.toml", kNewManifest);
    EXPECT_EQ(mode_of(dir / "private.toml"), 0600u);
  }
  EXPECT_EQ(files_in(dir.path()),
            (std::vector<std::string>{"VERSIONS.toml", "new.toml", "private.toml"}));  // no temporaries
}

TEST(WriteManifest, WritesThroughASymlinkWhichStaysALink) {
  TempDir dir;
  fs::create_directories(dir / "deploy");
  fs::create_directories(dir / "shared");
  write_file(dir / "shared" / "VERSIONS.toml", "schema = 1\n");
  ASSERT_EQ(chmod((dir / "shared" / "VERSIONS.toml").c_str(), 0640), 0);
  fs::create_symlink("../shared/VERSIONS.toml", dir / "deploy" / "VERSIONS.toml");
  fs::create_symlink("../shared/next.toml", dir / "deploy" / "next.toml");  // dangling: names the file to create
  const Umask mask(022);
  for (const char* name : {"VERSIONS.toml", "next.toml"}) {
    manifest::write_manifest(dir / "deploy" / name, kNewManifest);
    EXPECT_TRUE(fs::is_symlink(dir / "deploy" / name)) << name;
    EXPECT_EQ(fs::read_symlink(dir / "deploy" / name), fs::path("../shared") / name);
    EXPECT_EQ(slurp(dir / "shared" / name), kNewManifest) << name;
  }
  EXPECT_EQ(mode_of(dir / "shared" / "VERSIONS.toml"), 0640u);
  EXPECT_EQ(mode_of(dir / "shared" / "next.toml"), 0644u);
  EXPECT_EQ(files_in(dir / "deploy"), (std::vector<std::string>{"VERSIONS.toml", "next.toml"}));
  EXPECT_EQ(files_in(dir / "shared"), (std::vector<std::string>{"VERSIONS.toml", "next.toml"}));
}

TEST(WriteManifest, ALinkToSomethingElseThanAFileIsRefusedLeavingNothing) {
  TempDir dir;
  fs::create_directories(dir / "taken");
  fs::create_symlink("taken", dir / "VERSIONS.toml");
  try {
    manifest::write_manifest(dir / "VERSIONS.toml", kNewManifest);
    ADD_FAILURE() << "wrote through a link to a folder";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "VERSIONS.toml").string() + ": cannot write: " + (dir / "taken").string() + " is a directory");
  }
  EXPECT_TRUE(fs::is_symlink(dir / "VERSIONS.toml"));
  EXPECT_TRUE(fs::is_empty(dir / "taken"));
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"VERSIONS.toml", "taken"}));
}

}  // namespace
}  // namespace infer::test
