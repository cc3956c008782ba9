defmodule ExZarr.Storage.Azure.SharedKeyTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Azure.SharedKey

  doctest SharedKey

  @request %{
    method: "PUT",
    account: "acct",
    path: "/c/a%20b",
    query: [{"comp", "block"}, {"blockid", "QQ=="}],
    headers: [
      {"x-ms-version", "2021-12-02"},
      {"X-MS-Date", "Mon, 01 Jan 2024 00:00:00 GMT"},
      {"x-ms-meta-note", "  two   words "},
      {"If-Match", "\"0x1\""},
      {"range", "bytes=0-9"}
    ],
    content_length: 10,
    content_type: "application/octet-stream"
  }

  test "the string to sign: standard headers in order, x-ms-* headers sorted, the resource" do
    assert SharedKey.string_to_sign(@request) ==
             Enum.join(
               [
                 "PUT",
                 "",
                 "",
                 "10",
                 "",
                 "application/octet-stream",
                 "",
                 "",
                 "\"0x1\"",
                 "",
                 "",
                 "bytes=0-9",
                 "x-ms-date:Mon, 01 Jan 2024 00:00:00 GMT",
                 "x-ms-meta-note:two words",
                 "x-ms-version:2021-12-02",
                 "/acct/c/a%20b",
                 "blockid:QQ==",
                 "comp:block"
               ],
               "\n"
             )
  end

  test "a zero Content-Length is signed as empty; repeated query names are joined sorted" do
    request = %{@request | content_length: 0, query: [{"B", "2"}, {"b", "1"}], headers: []}
    lines = String.split(SharedKey.string_to_sign(request), "\n")
    assert Enum.at(lines, 3) == ""
    assert List.last(lines) == "b:1,2"
  end

  test "the authorization is the account and the HMAC-SHA256 of the string, in base64" do
    key = "secret key"
    mac = :crypto.mac(:hmac, :sha256, key, SharedKey.string_to_sign(@request))
    assert SharedKey.authorization(@request, key) == "SharedKey acct:" <> Base.encode64(mac)
    refute SharedKey.authorization(@request, "other") == SharedKey.authorization(@request, key)

    changed = %{@request | path: "/c/other"}
    refute SharedKey.authorization(changed, key) == SharedKey.authorization(@request, key)
  end
end
