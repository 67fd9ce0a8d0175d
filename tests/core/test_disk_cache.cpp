// core/disk_cache: the trust model of the on-disk caches (issue 48, item 8)
// and special files where an entry is read (item 4). An entry is believed
// only when nobody but this user could have written it: directories created
// owner-only, a directory or entry another user owns or may write refused
// (no cache), entries opened without following symlinks, only as regular
// files, and never blocking (a FIFO: each such case in a child under alarm).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/disk_cache.h"

namespace chainerc {
namespace {

const disk_cache::Kind kKind = {{'C', 'H', 'T', 'E', 'S', 'T', '0', '1'}, ".entry", 1 << 20};

class Dir {
 public:
  Dir() {
    const char* t = std::getenv("TMPDIR");
    std::string pattern = std::string(t && *t ? t : "/tmp") + "/chainerc-cache-trust-XXXXXX";
    if (!mkdtemp(pattern.data())) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~Dir() {
    const std::string cmd = "chmod -R u+rwx '" + path_ + "'; rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << cmd;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

mode_t mode_of(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

bool load(const std::string& dir, const std::string& key, std::string* payload) {
  return disk_cache::load(kKind, dir, key, payload);
}

// load in a child under alarm(10): 1 hit, 0 miss, negative: killed by that signal.
int load_in_child(const std::string& dir, const std::string& key) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    std::string p;
    _exit(load(dir, key, &p) ? 1 : 0);
  }
  int ws = 0;
  if (pid < 0 || waitpid(pid, &ws, 0) != pid) return -1000;
  return WIFSIGNALED(ws) ? -WTERMSIG(ws) : WEXITSTATUS(ws);
}

TEST(DiskCacheTrust, CreatesOwnerOnlyDirectoriesAndEntries) {
  Dir d;
  const std::string nested = d.path() + "/a/b";
  ASSERT_TRUE(disk_cache::store(kKind, nested, "k", "payload"));
  EXPECT_EQ(mode_of(d.path() + "/a"), 0700u);
  EXPECT_EQ(mode_of(nested), 0700u);
  EXPECT_EQ(mode_of(disk_cache::path_for(kKind, nested, "k")), 0600u);
  std::string p;
  EXPECT_TRUE(load(nested, "k", &p));
  EXPECT_EQ(p, "payload");
  // An existing directory this user owns, readable by all (what earlier
  // versions created, 0755): still trusted.
  ASSERT_EQ(chmod(nested.c_str(), 0755), 0);
  EXPECT_TRUE(load(nested, "k", &p));
}

TEST(DiskCacheTrust, RefusesADirectoryOthersMayWrite) {
  Dir d;
  const std::string dir = d.path() + "/c";
  ASSERT_TRUE(disk_cache::store(kKind, dir, "k", "payload"));
  std::string p;
  for (const mode_t m : {0777, 0770, 01777, 0720}) {
    ASSERT_EQ(chmod(dir.c_str(), m), 0);
    EXPECT_FALSE(load(dir, "k", &p)) << std::oct << m;
    EXPECT_FALSE(disk_cache::store(kKind, dir, "k2", "x")) << std::oct << m;
    std::ifstream f(disk_cache::path_for(kKind, dir, "k2"));
    EXPECT_FALSE(f.good()) << std::oct << m << ": written into an untrusted directory";
  }
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  EXPECT_TRUE(load(dir, "k", &p));
}

TEST(DiskCacheTrust, RefusesAnAncestorOthersMayWriteUnlessSticky) {
  Dir d;
  const std::string parent = d.path() + "/shared", dir = parent + "/mine";
  ASSERT_TRUE(disk_cache::store(kKind, dir, "k", "payload"));
  std::string p;
  ASSERT_EQ(chmod(parent.c_str(), 0777), 0);  // anyone could rename "mine" away and plant another
  EXPECT_FALSE(load(dir, "k", &p));
  ASSERT_EQ(chmod(parent.c_str(), 01777), 0);  // as /tmp: nobody else may rename it
  EXPECT_TRUE(load(dir, "k", &p));
}

TEST(DiskCacheTrust, RefusesAnEntryOthersMayWrite) {
  Dir d;
  ASSERT_TRUE(disk_cache::store(kKind, d.path(), "k", "payload"));
  const std::string entry = disk_cache::path_for(kKind, d.path(), "k");
  std::string p;
  for (const mode_t m : {0666, 0620, 0602}) {
    ASSERT_EQ(chmod(entry.c_str(), m), 0);
    EXPECT_FALSE(load(d.path(), "k", &p)) << std::oct << m;
  }
  ASSERT_EQ(chmod(entry.c_str(), 0644), 0);
  EXPECT_TRUE(load(d.path(), "k", &p));
}

TEST(DiskCacheTrust, RefusesWhatAnotherUserOwns) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can give a file to another user";
  Dir d;
  const std::string dir = d.path() + "/c";
  ASSERT_TRUE(disk_cache::store(kKind, dir, "k", "payload"));
  const std::string entry = disk_cache::path_for(kKind, dir, "k");
  std::string p;
  ASSERT_EQ(chown(entry.c_str(), 65534, 65534), 0);  // nobody
  EXPECT_FALSE(load(dir, "k", &p));
  ASSERT_EQ(chown(entry.c_str(), 0, 0), 0);
  ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(load(dir, "k", &p));
  EXPECT_FALSE(disk_cache::store(kKind, dir, "k3", "x"));
  ASSERT_EQ(chown(dir.c_str(), 0, 0), 0);
  ASSERT_EQ(chown(d.path().c_str(), 65534, 65534), 0);  // an ancestor, not writable by others
  EXPECT_FALSE(load(dir, "k", &p));
  ASSERT_EQ(chown(d.path().c_str(), 0, 0), 0);
  EXPECT_TRUE(load(dir, "k", &p));
}

TEST(DiskCacheTrust, EntriesAreRegularFilesNotFollowedAndNeverBlock) {
  Dir d, other;
  ASSERT_TRUE(disk_cache::store(kKind, other.path(), "k", "payload"));
  const std::string valid = disk_cache::path_for(kKind, other.path(), "k");
  const std::string entry = disk_cache::path_for(kKind, d.path(), "k");
  std::string p;
  // A symlink to a valid entry (of a trusted directory) is not followed.
  ASSERT_EQ(symlink(valid.c_str(), entry.c_str()), 0);
  EXPECT_FALSE(load(d.path(), "k", &p));
  ASSERT_EQ(unlink(entry.c_str()), 0);
  // A FIFO with no writer, a directory, /dev/zero by symlink: misses, at once.
  ASSERT_EQ(mkfifo(entry.c_str(), 0600), 0);
  EXPECT_EQ(load_in_child(d.path(), "k"), 0) << "a FIFO (negative: the signal that ended it)";
  ASSERT_EQ(unlink(entry.c_str()), 0);
  ASSERT_EQ(mkdir(entry.c_str(), 0700), 0);
  EXPECT_EQ(load_in_child(d.path(), "k"), 0) << "a directory";
  ASSERT_EQ(rmdir(entry.c_str()), 0);
  ASSERT_EQ(symlink("/dev/zero", entry.c_str()), 0);
  EXPECT_EQ(load_in_child(d.path(), "k"), 0) << "/dev/zero";
  // A store replaces what sits there (the rename), never writes through it.
  ASSERT_TRUE(disk_cache::store(kKind, d.path(), "k", "new"));
  struct stat st {};
  ASSERT_EQ(lstat(entry.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_TRUE(load(d.path(), "k", &p));
  EXPECT_EQ(p, "new");
  // The cache directory given as a symlink to a trusted directory: resolved.
  const std::string link = d.path() + "/link";
  ASSERT_EQ(symlink(other.path().c_str(), link.c_str()), 0);
  EXPECT_TRUE(load(link, "k", &p));
  EXPECT_EQ(p, "payload");
}

}  // namespace
}  // namespace chainerc
