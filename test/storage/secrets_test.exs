defmodule ExZarr.Storage.SecretsTest do
  # Credentials never print: not with the structs' own Inspect, not with `structs: false`
  # (which bypasses it), not with `~p` or `~w` (logs and crash reports of OTP processes).
  use ExUnit.Case, async: true

  alias ExZarr.Storage

  @endpoint "http://127.0.0.1:1"

  # Every way a store's term can end up as text.
  defp printed(term) do
    [
      inspect(term),
      inspect(term, structs: false),
      inspect(term, structs: false, limit: :infinity, printable_limit: :infinity),
      to_string(:io_lib.format(~c"~p", [term])),
      to_string(:io_lib.format(~c"~w", [term])),
      to_string(:io_lib.format(~c"~tp", [term]))
    ]
  end

  defp assert_hidden(store, secrets) do
    for text <- printed(store), secret <- secrets do
      refute String.contains?(text, secret), "#{inspect(secret)} shows in: #{text}"
    end

    # What printed above is what is there: the check sees the store's fields.
    assert Enum.any?(printed(store), &String.contains?(&1, "127.0.0.1"))
  end

  test "S3: the secret key and the session token" do
    {:ok, store} =
      Storage.new(:s3,
        bucket: "b",
        endpoint: @endpoint,
        access_key_id: "AKIDEXAMPLE",
        secret_access_key: "s3-secret-key-0123456789",
        session_token: "s3-session-token-0123456789"
      )

    assert_hidden(store, ["s3-secret-key-0123456789", "s3-session-token-0123456789"])
    assert_hidden(store.state.client, ["s3-session-token-0123456789"])
  end

  test "S3: credentials from the environment" do
    env = [
      {"AWS_ACCESS_KEY_ID", "AKIDENV"},
      {"AWS_SECRET_ACCESS_KEY", "env-secret-key-987"},
      {"AWS_SESSION_TOKEN", "env-session-token-987"}
    ]

    previous = for {name, _} <- env, do: {name, System.get_env(name)}
    System.put_env(env)

    on_exit(fn ->
      for {name, value} <- previous,
          do: if(value, do: System.put_env(name, value), else: System.delete_env(name))
    end)

    {:ok, store} = Storage.new(:s3, bucket: "b", endpoint: @endpoint)
    assert_hidden(store, ["env-secret-key-987", "env-session-token-987"])
  end

  test "S3: a session token that is not a string is an error that does not quote it" do
    assert Storage.new(:s3,
             bucket: "b",
             endpoint: @endpoint,
             access_key_id: "a",
             secret_access_key: "s",
             session_token: 12
           ) == {:error, {:invalid_option, :session_token, :not_a_string}}
  end

  test "GCS: the OAuth token" do
    {:ok, store} = Storage.new(:gcs, bucket: "b", endpoint: @endpoint, token: "ya29.gcs-oauth-42")
    assert_hidden(store, ["ya29.gcs-oauth-42"])
  end

  test "Azure: the shared key, the SAS token and the connection string" do
    key = Base.encode64("azure-account-key-bytes!")

    {:ok, store} =
      Storage.new(:azure,
        container: "c",
        account: "acct",
        endpoint: @endpoint <> "/acct",
        account_key: key
      )

    assert_hidden(store, [key, "azure-account-key-bytes!"])

    {:ok, store} =
      Storage.new(:azure,
        container: "c",
        account: "acct",
        endpoint: @endpoint <> "/acct",
        sas_token: "sv=2021&sig=azure-sas-signature"
      )

    assert_hidden(store, ["azure-sas-signature"])

    {:ok, store} =
      Storage.new(:azure,
        container: "c",
        connection_string:
          "AccountName=acct;AccountKey=#{key};BlobEndpoint=#{@endpoint}/acct;" <>
            "SharedAccessSignature=sv=1&sig=conn-sas-sig"
      )

    assert_hidden(store, [key, "azure-account-key-bytes!", "conn-sas-sig"])
  end

  test "TLS client options (a key's password) of every object store" do
    ssl = [password: ~c"tls-key-password-77", verify: :verify_none]

    for {backend, opts} <- [
          s3: [bucket: "b", anonymous: true],
          gcs: [bucket: "b"],
          azure: [container: "c", account: "acct"]
        ] do
      {:ok, store} = Storage.new(backend, opts ++ [endpoint: @endpoint, ssl: ssl])
      assert_hidden(store, ["tls-key-password-77"])
    end
  end

  test "a cache in front of an S3 store" do
    {:ok, store} =
      ExZarr.storage(
        path: "s3://b/x",
        endpoint: @endpoint,
        access_key_id: "AKID",
        secret_access_key: "cached-secret-55",
        session_token: "cached-token-55",
        cache: 1_000_000
      )

    assert store.module == Storage.Cache
    assert_hidden(store, ["cached-secret-55", "cached-token-55"])
    Storage.close(store)
  end
end
