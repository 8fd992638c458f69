// stiefel::io: SHA-256 against FIPS 180-4's test vectors; atomic writes that replace regular files
// only, leave nothing behind when they fail, and clean up after dead processes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stiefel/io/atomic_file.h>
#include <stiefel/io/sha256.h>
#include <string>

namespace {

namespace fs = std::filesystem;
using stiefel::io::IoError;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Folder : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("stiefel-io-test-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::size_t entries() const { return std::distance(fs::directory_iterator(dir), fs::directory_iterator()); }
};

TEST(Sha256, FipsTestVectors) {
  EXPECT_EQ(stiefel::io::sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(stiefel::io::sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(stiefel::io::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(stiefel::io::sha256(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_F(Folder, Sha256OfAFileEqualsThatOfItsBytesAndAMissingFileIsAnError) {
  std::string bytes;
  for (unsigned i = 0; i < 3000000; ++i) bytes += char(i * 7919u % 251u);  // spans several 1 MiB reads
  std::ofstream(dir / "f", std::ios::binary) << bytes;
  EXPECT_EQ(stiefel::io::sha256_file(dir / "f"), stiefel::io::sha256(bytes));
  EXPECT_THROW(stiefel::io::sha256_file(dir / "missing"), IoError);
}

TEST_F(Folder, WritesCreateFoldersAndReplaceRegularFilesLeavingNoTemporary) {
  const auto p = dir / "a" / "b" / "out.json";
  stiefel::io::write_file_atomically(p, "first");
  stiefel::io::write_file_atomically(p, "second");
  EXPECT_EQ(read(p), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(p.parent_path()), fs::directory_iterator()), 1);
}

TEST_F(Folder, SymbolicLinksFoldersAndFifosAreRefusedAndKept) {
  std::ofstream(dir / "target") << "keep";
  fs::create_symlink("target", dir / "link");
  fs::create_directory(dir / "folder");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  for (const char* name : {"link", "folder", "fifo"}) {
    EXPECT_THROW(stiefel::io::write_file_atomically(dir / name, "x"), IoError) << name;
    EXPECT_THROW(stiefel::io::check_output_path(dir / name), IoError) << name;
  }
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read(dir / "target"), "keep");
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
  EXPECT_EQ(entries(), 4u);  // no temporary left behind
  try {
    stiefel::io::write_file_atomically(dir / "link", "x");
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
}

TEST_F(Folder, AFailingWriterLeavesTheOldFileAndNoTemporary) {
  const auto p = dir / "out";
  stiefel::io::write_file_atomically(p, "old");
  EXPECT_THROW(stiefel::io::write_file_atomically(p,
                                                  [](const fs::path& tmp) {
                                                    std::ofstream(tmp) << "half";
                                                    throw std::runtime_error("disk full");
                                                  }),
               IoError);
  EXPECT_EQ(read(p), "old");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(Folder, AnUncommittedPendingFileIsRemovedACommittedOneReplaces) {
  const auto p = dir / "ckpt";
  stiefel::io::write_file_atomically(p, "old");
  {
    stiefel::io::PendingFile f(p, std::string_view("new"));
    EXPECT_EQ(read(f.temporary()), "new");
    EXPECT_EQ(read(p), "old");
  }
  EXPECT_EQ(read(p), "old");
  EXPECT_EQ(entries(), 1u);
  stiefel::io::PendingFile f(p, std::string_view("new"));
  f.commit();
  EXPECT_EQ(read(p), "new");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(Folder, TemporariesOfDeadProcessesAreRemovedOthersKept) {
  const auto p = dir / "run.json";
  std::ofstream(p.string() + ".tmp.999999999") << "stale";                                         // no such process
  std::ofstream(p.string() + ".tmp.1") << "init's";                                                // a live process
  std::ofstream(p.string() + ".tmp.notapid") << "other";                                           // not ours
  std::ofstream(dir / "other.json.tmp.999999999") << "another file's";                             // another file
  const std::string here = stiefel::io::temporary_path(p).string().substr(p.string().size() + 5);  // PID.HOST
  const std::string host = here.substr(here.find('.') + 1);
  std::ofstream(p.string() + ".tmp.999999998." + host) << "stale, this machine's";
  std::ofstream(p.string() + ".tmp.999999997.another-machine") << "another machine's";  // may be live there
  EXPECT_EQ(stiefel::io::remove_stale_temporaries(p), 2);
  EXPECT_FALSE(fs::exists(p.string() + ".tmp.999999999"));
  EXPECT_FALSE(fs::exists(p.string() + ".tmp.999999998." + host));
  EXPECT_TRUE(fs::exists(p.string() + ".tmp.999999997.another-machine"));
  EXPECT_TRUE(fs::exists(p.string() + ".tmp.1"));
  EXPECT_TRUE(fs::exists(p.string() + ".tmp.notapid"));
  EXPECT_TRUE(fs::exists(dir / "other.json.tmp.999999999"));
}

TEST_F(Folder, AFolderLockExcludesASecondWriterUntilReleased) {
  {
    stiefel::io::FolderLock first(dir);
    try {
      stiefel::io::FolderLock second(dir);  // a second open file description: flock excludes it
      ADD_FAILURE() << "a second lock on the same folder was granted";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("another process is writing this folder"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(stiefel::io::FolderLock again(dir));
}

TEST_F(Folder, TheLockProbeSeesAHolderAndLeavesNoLockBehind) {
  EXPECT_FALSE(stiefel::io::folder_lock_held(dir));
  EXPECT_FALSE(std::filesystem::exists(dir / ".lock"));  // the probe creates nothing
  {
    stiefel::io::FolderLock held(dir);
    EXPECT_TRUE(stiefel::io::folder_lock_held(dir));
  }
  EXPECT_FALSE(stiefel::io::folder_lock_held(dir));     // the lock file remains, nobody holds it
  EXPECT_NO_THROW(stiefel::io::FolderLock again(dir));  // and the probe did not keep it
}

TEST_F(Folder, OutputPathChecksNameTheProblem) {
  EXPECT_NO_THROW(stiefel::io::check_output_path(dir / "new" / "deeper" / "file"));
  std::ofstream(dir / "plain") << "x";
  EXPECT_THROW(stiefel::io::check_output_path(dir / "plain" / "file"), IoError);  // parent is a file
  EXPECT_THROW(stiefel::io::check_output_path(dir / ""), IoError);
}

}  // namespace
