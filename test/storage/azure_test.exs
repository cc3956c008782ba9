defmodule ExZarr.Storage.AzureTest do
  # One Azurite for the module; some tests set environment variables, so not async.
  use ExUnit.Case, async: false

  alias ExZarr.Test.Azurite

  use ExZarr.StorageConformance,
    backend: :azure,
    opts: fn ctx ->
      Azurite.store_opts(ctx.server, "conformance", "t/#{:erlang.phash2(ctx.test)}") ++
        [block_threshold: 4 * 1024 * 1024]
    end

  use ExZarr.Test.ObjectStoreCases,
    server: ExZarr.Test.Azurite,
    backend: ExZarr.Storage.Azure,
    scheme: "az://",
    bucket_option: :container

  alias ExZarr.Storage.Azure

  defp store(opts) do
    {:ok, store} = Storage.new(:azure, opts)
    store
  end

  test "conditions hold for values committed as a block list", ctx do
    opts = Azurite.store_opts(ctx.server, "blocks-cas", "b")
    store = store(opts ++ [block_threshold: 0, block_size: 300_000])
    assert ExZarr.Test.ConditionalCases.large_values(store, 700_000) == :ok
  end

  test "large values go up as blocks and one block list; small ones in one Put Blob", ctx do
    opts = Azurite.store_opts(ctx.server, "blocks", "b")
    store = store(opts ++ [block_threshold: 1024 * 1024, block_size: 300_000])
    value = :crypto.strong_rand_bytes(1024 * 1024 + 1000)

    :ok =
      Storage.put(store, "big", [
        binary_part(value, 0, 1000),
        binary_part(value, 1000, 1024 * 1024)
      ])

    assert Storage.get(store, "big") == {:ok, value}
    assert Storage.get(store, "big", {299_997, 6}) == {:ok, binary_part(value, 299_997, 6)}

    assert Storage.get(store, "big", {:suffix, 5}) ==
             {:ok, binary_part(value, byte_size(value) - 5, 5)}

    {:ok, 200, _, body} =
      Azure.request(store.state, :get, "b/big", query: [{"comp", "blocklist"}])

    {:ok, blocks} = Azure.XML.select(body, [["BlockList", "CommittedBlocks", "Block", "Size"]])

    sizes = for {_, _, size} <- blocks, do: String.to_integer(size)
    assert sizes == [300_000, 300_000, 300_000, 1024 * 1024 + 1000 - 900_000]
    :ok = Storage.put(store, "small", ["a", ["b" | "c"]])
    assert Storage.get(store, "small") == {:ok, "abc"}
  end

  @tag :interop
  test "zarr-python (adlfs) and ExZarr read each other's v2, v3 and sharded arrays", ctx do
    opts = Azurite.store_opts(ctx.server, "adlfs", "")
    {account, key} = Azurite.account()

    connection =
      "DefaultEndpointsProtocol=http;AccountName=#{account};AccountKey=#{key};" <>
        "BlobEndpoint=#{ctx.server.endpoint};"

    ExZarr.Test.FsspecInterop.both_ways(
      "abfs://adlfs",
      %{"connection_string" => connection},
      fn path ->
        store(Keyword.put(opts, :path, path))
      end
    )
  end

  test "a wrong key is refused with an error that names no secret", ctx do
    opts = Azurite.store_opts(ctx.server, "creds", "")
    wrong = Base.encode64("not-the-key-XYZ")
    bad = store(Keyword.put(opts, :account_key, wrong))
    assert {:error, {:azure_error, 403, "AuthorizationFailure", _}} = Storage.get(bad, "k")
    assert {:error, reason} = Storage.put(bad, "k", "v")
    refute inspect(reason) =~ wrong
    refute inspect(bad.state, structs: false) =~ wrong
    {_account, key} = Azurite.account()
    refute inspect(store(opts).state, structs: false) =~ key
  end

  test "a SAS token authorizes requests in place of the key", ctx do
    opts = Azurite.store_opts(ctx.server, "sas", "")
    :ok = Storage.put(store(opts), "k", "v")
    sas = account_sas(Azurite.account())
    sas_opts = opts |> Keyword.delete(:account_key) |> Keyword.put(:sas_token, "?" <> sas)
    sas_store = store(sas_opts)
    assert Storage.get(sas_store, "k") == {:ok, "v"}
    :ok = Storage.put(sas_store, "w", "x")
    assert Storage.list(sas_store) == {:ok, ["k", "w"]}
    refute inspect(sas_store.state, structs: false) =~ sas
  end

  test "anonymous requests read public containers only", ctx do
    opts = Azurite.store_opts(ctx.server, "public", "")
    owner = store(opts)
    :ok = Storage.put(owner, "zarr.json", "{}")
    anonymous = store(Keyword.delete(opts, :account_key))
    assert {:error, {:azure_error, status, _, _}} = Storage.get(anonymous, "zarr.json")
    assert status in [401, 403, 404]

    {:ok, 200, _, _} =
      Azure.request(owner.state, :put, "",
        query: [{"restype", "container"}, {"comp", "acl"}],
        headers: [{"x-ms-blob-public-access", "container"}],
        body: ""
      )

    assert Storage.get(anonymous, "zarr.json") == {:ok, "{}"}
    assert Storage.list(anonymous) == {:ok, ["zarr.json"]}
    assert {:error, {:azure_error, _, _, _}} = Storage.put(anonymous, "k", "v")
  end

  # An account SAS for the blob service (all permissions, an hour), signed as the service
  # version 2021-12-02 defines it.
  defp account_sas({account, key}) do
    expiry =
      DateTime.utc_now()
      |> DateTime.add(3600)
      |> DateTime.truncate(:second)
      |> DateTime.to_iso8601()

    fields = [account, "racwdl", "b", "sco", "", expiry, "", "http", "2021-12-02", "", ""]
    to_sign = Enum.join(fields, "\n")
    sig = Base.encode64(:crypto.mac(:hmac, :sha256, Base.decode64!(key), to_sign))

    URI.encode_query(
      sv: "2021-12-02",
      ss: "b",
      srt: "sco",
      sp: "racwdl",
      se: expiry,
      spr: "http",
      sig: sig
    )
  end

  test "the account and key come from the environment", ctx do
    opts = Azurite.store_opts(ctx.server, "env", "")
    :ok = Storage.put(store(opts), "k", "v")
    {account, key} = Azurite.account()
    System.put_env(%{"AZURE_STORAGE_ACCOUNT" => account, "AZURE_STORAGE_KEY" => key})

    try do
      from_env = store(endpoint: ctx.server.endpoint, container: "env")
      assert Storage.get(from_env, "k") == {:ok, "v"}
    after
      System.delete_env("AZURE_STORAGE_ACCOUNT")
      System.delete_env("AZURE_STORAGE_KEY")
    end
  end

  test "a connection string gives the account, key and endpoint", ctx do
    opts = Azurite.store_opts(ctx.server, "connection", "")
    :ok = Storage.put(store(opts), "k", "v")
    {account, key} = Azurite.account()

    string =
      "DefaultEndpointsProtocol=http;AccountName=#{account};AccountKey=#{key};" <>
        "BlobEndpoint=#{ctx.server.endpoint};"

    from_string = store(connection_string: string, container: "connection")
    assert Storage.get(from_string, "k") == {:ok, "v"}
    System.put_env("AZURE_STORAGE_CONNECTION_STRING", string)

    try do
      assert Storage.get(store(path: "az://connection"), "k") == {:ok, "v"}
    after
      System.delete_env("AZURE_STORAGE_CONNECTION_STRING")
    end

    assert Storage.new(:azure, connection_string: "AccountName", container: "c") ==
             {:error, {:invalid_option, :connection_string, :not_key_value_pairs}}

    {:ok, cloud} =
      Storage.new(:azure,
        connection_string: "AccountName=acct;EndpointSuffix=core.example.net",
        container: "c"
      )

    assert URI.to_string(cloud.state.endpoint) == "https://acct.blob.core.example.net"
  end

  test "a missing container is an error, not an empty store", ctx do
    {account, key} = Azurite.account()

    store =
      store(endpoint: ctx.server.endpoint, account: account, account_key: key, container: "nope")

    assert {:error, {:azure_error, 404, "ContainerNotFound", _}} = Storage.get(store, "k")
    assert {:error, {:azure_error, 404, "ContainerNotFound", _}} = Storage.list(store)
    assert {:error, {:azure_error, 404, "ContainerNotFound", _}} = Storage.put(store, "k", "v")
  end

  test "bad options give errors" do
    assert Storage.new(:azure, account: "a") == {:error, {:missing_option, :container}}

    assert Storage.new(:azure, account: "a", container: "a/b") ==
             {:error, {:invalid_option, :container, "a/b"}}

    assert Storage.new(:azure, container: "c") == {:error, {:missing_option, :account}}

    assert Storage.new(:azure, account: "a.b", container: "c") ==
             {:error, {:invalid_option, :account, "a.b"}}

    assert Storage.new(:azure, account: "a", container: "c", account_key: "***") ==
             {:error, {:invalid_option, :account_key, :not_base64}}

    assert Storage.new(:azure, account: "a", container: "c", block_size: 0) ==
             {:error, {:invalid_option, :block_size, 0}}
  end
end

defmodule ExZarr.Storage.AzureRetryTest do
  # A scripted HTTP server stands in for the Blob service to check retries and signing.
  use ExUnit.Case, async: true

  alias ExZarr.Storage
  alias ExZarr.Storage.Azure.SharedKey
  alias ExZarr.Test.ScriptedHTTP

  @key Base.encode64("secret key")

  defp store(endpoint) do
    {:ok, store} =
      Storage.new(:azure,
        endpoint: endpoint <> "/acct",
        account: "acct",
        account_key: @key,
        container: "c",
        max_retries: 3,
        base_backoff: 1
      )

    store
  end

  test "503 ServerBusy, 500 and resets are retried, each attempt signed afresh" do
    busy =
      ~s(<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code>) <>
        "<Message>The server is busy.\nRequestId:1</Message></Error>"

    endpoint =
      ScriptedHTTP.serve([
        {503, [{"x-ms-error-code", "ServerBusy"}], busy},
        {500, [], ""},
        :reset,
        {206, [], "ata"}
      ])

    assert Storage.get(store(endpoint), "a b/ü", {1, 3}) == {:ok, "ata"}
    requests = ScriptedHTTP.requests()
    assert length(requests) == 4

    for {method, path, headers, body} <- requests do
      assert {method, path, body} == {"GET", "/acct/c/a%20b/%C3%BC", ""}
      assert headers["x-ms-range"] == "bytes=1-3"

      signed = %{
        method: "GET",
        account: "acct",
        path: path,
        query: [],
        headers: Enum.filter(headers, fn {k, _} -> String.starts_with?(k, "x-ms-") end),
        content_length: 0,
        content_type: ""
      }

      assert headers["authorization"] == SharedKey.authorization(signed, "secret key")
    end
  end

  test "errors carry the service's code and the first line of its message; 404s of blobs are :not_found" do
    endpoint =
      ScriptedHTTP.serve([
        {404, [{"x-ms-error-code", "BlobNotFound"}], ""},
        {403, [],
         "<Error><Code>AuthorizationFailure</Code><Message>Nope &amp; no\nRequestId:2</Message></Error>"}
      ])

    store = store(endpoint)
    assert Storage.get(store, "k") == {:error, :not_found}

    assert Storage.get(store, "k") ==
             {:error, {:azure_error, 403, "AuthorizationFailure", "Nope & no"}}
  end

  test "listings that are not XML, or carry a DTD, are errors" do
    endpoint =
      ScriptedHTTP.serve([
        {200, [], "not xml"},
        {200, [], ~s(<!DOCTYPE x [<!ENTITY a "aaaa">]><EnumerationResults/>)}
      ])

    store = store(endpoint)
    assert {:error, {:azure_error, 200, "InvalidXml", _}} = Storage.list(store)
    assert {:error, {:azure_error, 200, "InvalidXml", _}} = Storage.list(store)
  end
end
