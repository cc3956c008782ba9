defmodule ExZarr.Storage.Azure.XMLTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Azure.XML

  doctest XML

  @listing """
  <?xml version="1.0" encoding="utf-8"?>
  <EnumerationResults ContainerName="c">
    <Blobs>
      <Blob><Name>a/zarr.json</Name></Blob>
      <BlobPrefix><Name>a/c/</Name></BlobPrefix>
      <Blob><Name Encoded="true">a%0Bb</Name></Blob>
    </Blobs>
    <NextMarker>m2</NextMarker>
  </EnumerationResults>
  """

  test "elements at several paths, in document order, with attributes and text" do
    paths = [
      ["EnumerationResults", "Blobs", "Blob", "Name"],
      ["EnumerationResults", "Blobs", "BlobPrefix", "Name"],
      ["EnumerationResults", "NextMarker"]
    ]

    assert XML.select(@listing, paths) ==
             {:ok,
              [
                {Enum.at(paths, 0), %{}, "a/zarr.json"},
                {Enum.at(paths, 1), %{}, "a/c/"},
                {Enum.at(paths, 0), %{"Encoded" => "true"}, "a%0Bb"},
                {Enum.at(paths, 2), %{}, "m2"}
              ]}
  end

  test "a path matches from the root only; unknown paths give nothing" do
    assert XML.select(@listing, [["Blobs", "Blob", "Name"]]) == {:ok, []}
    assert XML.select("<a><a><a>x</a></a></a>", [["a", "a"]]) == {:ok, [{["a", "a"], %{}, ""}]}
  end

  test "text keeps its non-ASCII characters" do
    assert XML.select("<a>é ü 日</a>", [["a"]]) == {:ok, [{["a"], %{}, "é ü 日"}]}
  end

  test "DTDs, entities, broken and truncated documents are errors, never crashes" do
    for bad <- [
          ~s(<!DOCTYPE a [<!ENTITY x "xxxx">]><a>&x;</a>),
          ~s(<!ENTITY x "y"><a/>),
          "<a><b></a>",
          "<a>",
          "not xml",
          "",
          <<0xFF, 0xFE>>
        ] do
      assert {:error, {:invalid_xml, _}} = XML.select(bad, [["a"]]), inspect(bad)
    end
  end
end
