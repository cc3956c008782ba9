defmodule ExZarr.Storage.S3.ClientTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.S3.Client

  @listing """
  <?xml version="1.0" encoding="UTF-8"?>
  <ListBucketResult>
    <Contents><Key>a/zarr.json</Key><Size>10</Size></Contents>
    <Contents><Key>a/x &amp; y &lt;1&gt; &#233; &#x65E5;</Key></Contents>
    <CommonPrefixes><Prefix>a/c/</Prefix></CommonPrefixes>
    <CommonPrefixes>
      <Prefix>a/&quot;q&apos;/</Prefix>
    </CommonPrefixes>
    <IsTruncated>true</IsTruncated>
    <NextContinuationToken>t2</NextContinuationToken>
  </ListBucketResult>
  """

  test "the values of an element, unescaped, in document order" do
    assert Client.xml_values(@listing, "Key") == ["a/zarr.json", "a/x & y <1> é 日"]
    assert Client.xml_value(@listing, "NextContinuationToken") == "t2"
    assert Client.xml_value(@listing, "Missing") == nil
    assert Client.common_prefixes(@listing) == ["a/c/", ~s(a/"q'/)]
  end

  test "character references that are no characters stay as they are" do
    assert Client.xml_value("<K>&#xD800;&#x110000;&#65;</K>", "K") == "&#xD800;&#x110000;A"
    assert Client.xml_value("<K>&bogus;</K>", "K") == "&bogus;"
  end

  test "errors carry the status and the body's code and message, or empty ones" do
    body = "<Error><Code>NoSuchBucket</Code><Message>The bucket &amp; all</Message></Error>"
    assert Client.error(404, body) == {:s3_error, 404, "NoSuchBucket", "The bucket & all"}
    assert Client.error(500, "") == {:s3_error, 500, "", ""}
    assert Client.error(502, "<html>bad gateway</html>") == {:s3_error, 502, "", ""}
  end

  test "the credentials are left out of inspect" do
    client = %Client{
      http: nil,
      scheme: "http",
      host: "h",
      port: 80,
      bucket: "b",
      region: "r",
      credentials: %{access_key_id: "AKIDSECRETLOOKING", secret_access_key: fn -> "s" end}
    }

    refute inspect(client) =~ "AKIDSECRETLOOKING"
  end
end
