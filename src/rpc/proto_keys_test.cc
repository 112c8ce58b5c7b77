// Keys are opaque bytes, and so is every message that may quote one. proto3 `string` fields
// must hold valid UTF-8: protobuf refuses to parse a message whose string field does not, so a
// key like "\xff\xfe..." in a string field turned a whole batch's reply into "unparsable
// response" (issue 16, item 4). These tests hold the class, not one instance: every field of the
// schema that carries a key, a tenant id (a key prefix) or a message is `bytes`, and every one
// round-trips non-UTF-8 bytes.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "rpc/kvpool.pb.h"

namespace kvpool::rpc {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

bool CarriesKeyOrMessage(const FieldDescriptor& f) {
  const std::string& n = f.name();
  return n.find("key") != std::string::npos || n.find("message") != std::string::npos ||
         n.find("tenant") != std::string::npos;
}

const FileDescriptor& Schema() { return *Empty::descriptor()->file(); }

template <typename Visit>
void ForEachMessage(const Descriptor& d, Visit&& visit) {
  visit(d);
  for (int i = 0; i < d.nested_type_count(); ++i) ForEachMessage(*d.nested_type(i), visit);
}

template <typename Visit>
void ForEachMessage(Visit&& visit) {
  for (int i = 0; i < Schema().message_type_count(); ++i) {
    ForEachMessage(*Schema().message_type(i), visit);
  }
}

TEST(ProtoKeysTest, EveryFieldCarryingAKeyOrAMessageIsBytes) {
  std::set<std::string> checked;
  ForEachMessage([&](const Descriptor& d) {
    for (int i = 0; i < d.field_count(); ++i) {
      const FieldDescriptor& f = *d.field(i);
      if (f.type() != FieldDescriptor::TYPE_STRING && f.type() != FieldDescriptor::TYPE_BYTES) {
        continue;
      }
      if (!CarriesKeyOrMessage(f)) continue;
      EXPECT_EQ(f.type(), FieldDescriptor::TYPE_BYTES)
          << f.full_name() << " carries a key or a message: it must be bytes (keys need not be "
          << "UTF-8; changing string to bytes is wire-compatible)";
      checked.insert(f.full_name());
    }
  });
  // The fields this is about, so the test cannot pass by matching nothing.
  for (const char* name : {"kvpool.rpc.ErrorInfo.message", "kvpool.rpc.Hello.tenant_id",
                           "kvpool.rpc.PutItem.key", "kvpool.rpc.PutStartResult.message",
                           "kvpool.rpc.PutEnd.commit_keys", "kvpool.rpc.PutEnd.revoke_keys",
                           "kvpool.rpc.KeysRequest.keys", "kvpool.rpc.KeysRequest.packed_keys",
                           "kvpool.rpc.CodesReply.messages", "kvpool.rpc.ObjectLocation.message",
                           "kvpool.rpc.JournalEntry.key", "kvpool.rpc.StoredObject.key",
                           "kvpool.rpc.LocalObject.key", "kvpool.rpc.LocalGetReply.messages"}) {
    EXPECT_TRUE(checked.contains(name)) << name;
  }
}

// Every bytes field of every message, set to non-UTF-8 bytes, survives serialize + parse.
TEST(ProtoKeysTest, EveryBytesFieldRoundTripsNonUtf8) {
  const std::string bad("\xff\xfe\x00\xc0\xaf\xed\xa0\x80-key", 12);
  int fields = 0;
  ForEachMessage([&](const Descriptor& d) {
    const google::protobuf::Message* prototype =
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(&d);
    ASSERT_NE(prototype, nullptr) << d.full_name();
    std::unique_ptr<google::protobuf::Message> m(prototype->New());
    const google::protobuf::Reflection& r = *m->GetReflection();
    for (int i = 0; i < d.field_count(); ++i) {
      const FieldDescriptor& f = *d.field(i);
      if (f.type() != FieldDescriptor::TYPE_BYTES) continue;
      if (f.is_repeated()) {
        r.AddString(m.get(), &f, bad);
      } else {
        r.SetString(m.get(), &f, bad);
      }
      ++fields;
    }
    std::string wire;
    ASSERT_TRUE(m->SerializeToString(&wire)) << d.full_name();
    std::unique_ptr<google::protobuf::Message> back(prototype->New());
    ASSERT_TRUE(back->ParseFromString(wire)) << d.full_name();
    for (int i = 0; i < d.field_count(); ++i) {
      const FieldDescriptor& f = *d.field(i);
      if (f.type() != FieldDescriptor::TYPE_BYTES) continue;
      EXPECT_EQ(f.is_repeated() ? r.GetRepeatedString(*back, &f, 0) : r.GetString(*back, &f), bad)
          << f.full_name();
    }
  });
  EXPECT_GE(fields, 14);
}

}  // namespace
}  // namespace kvpool::rpc
