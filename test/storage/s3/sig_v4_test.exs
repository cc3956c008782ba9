defmodule ExZarr.Storage.S3.SigV4Test do
  use ExUnit.Case, async: true
  doctest ExZarr.Storage.S3.SigV4

  alias ExZarr.Storage.S3.SigV4

  def example_secret, do: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

  @creds %{
    access_key_id: "AKIAIOSFODNN7EXAMPLE",
    secret_access_key: &__MODULE__.example_secret/0,
    session_token: nil
  }

  # AWS's documented GET Object example.
  @get_object %{
    method: "GET",
    host: "examplebucket.s3.amazonaws.com",
    path: "/test.txt",
    query: [],
    headers: [{"Range", "bytes=0-9"}],
    payload_hash: SigV4.empty_hash()
  }

  defp sign_at(now),
    do: SigV4.sign(@get_object, credentials: @creds, region: "us-east-1", now: now)

  test "AWS's documented GET Object example" do
    headers = sign_at(~U[2013-05-24 00:00:00Z])

    assert {"authorization",
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," <>
              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date," <>
              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"} in headers

    assert {"x-amz-date", "20130524T000000Z"} in headers
  end

  test "x-amz-date pads every field and the scope takes its day" do
    headers = sign_at(~U[0987-01-02 03:04:05Z])
    assert {"x-amz-date", "09870102T030405Z"} in headers
    {_, auth} = List.keyfind(headers, "authorization", 0)
    assert auth =~ "Credential=AKIAIOSFODNN7EXAMPLE/09870102/us-east-1/s3/aws4_request,"
  end

  test "paths: unreserved characters and / stay as they are, every other byte is encoded" do
    assert SigV4.encode_path("/bucket/a-b_c.d~e/c/0/12") == "/bucket/a-b_c.d~e/c/0/12"
    assert SigV4.encode_path("/b/x=1&y/%") == "/b/x%3D1%26y/%25"
    assert SigV4.encode_path("/b/\u00e9 z") == "/b/%C3%A9%20z"
  end

  test "the derived signing key follows the secret and the day, not only the key id" do
    auth = fn creds, now ->
      @get_object
      |> SigV4.sign(credentials: creds, region: "us-east-1", now: now)
      |> List.keyfind("authorization", 0)
    end

    day = ~U[2013-05-24 00:00:00Z]
    documented = auth.(@creds, day)
    rotated = auth.(%{@creds | secret_access_key: fn -> "another secret" end}, day)
    next_day = auth.(@creds, ~U[2013-05-25 00:00:00Z])
    assert rotated != documented
    assert next_day != documented
    # Back to the first secret and day: AWS's documented signature again.
    assert auth.(@creds, day) == documented

    assert elem(documented, 1) =~
             "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
  end

  test "a session token is sent and signed; the secret never appears" do
    creds = %{@creds | session_token: fn -> "TOKEN" end}

    request = %{
      method: "GET",
      host: "h",
      path: "/",
      query: [{"list-type", "2"}],
      headers: [],
      payload_hash: SigV4.empty_hash()
    }

    headers = SigV4.sign(request, credentials: creds, region: "eu-west-1")
    assert {"x-amz-security-token", "TOKEN"} in headers
    {"authorization", auth} = List.keyfind(headers, "authorization", 0)
    assert auth =~ "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
    refute inspect(headers) =~ "wJalrXUtnFEMI"
  end

  test "query strings are sorted and strictly encoded" do
    assert SigV4.canonical_query([
             {"prefix", "a b/ü"},
             {"list-type", "2"},
             {"continuation-token", "x+y="}
           ]) ==
             "continuation-token=x%2By%3D&list-type=2&prefix=a%20b%2F%C3%BC"
  end
end
