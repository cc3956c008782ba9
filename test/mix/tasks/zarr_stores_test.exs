defmodule Mix.Tasks.Zarr.StoresTest do
  # Every zarr.* task on every remote store URL, with credentials from the environment and
  # --endpoint. Mix.shell/0 and the environment are global.
  use ExUnit.Case, async: false

  alias ExZarr.Storage
  alias ExZarr.Test.{Azurite, FakeGCS, MinIO, MixTask, Nginx, Server}

  @moduletag :tmp_dir
  # Servers start slowly on a busy machine.
  @moduletag timeout: 300_000

  setup_all do
    installs = [
      gcs: FakeGCS.install(),
      azure: Azurite.install(),
      nginx: Server.install("scripts/install-nginx")
    ]

    for {name, {:error, reason}} <- installs, do: raise("#{name} is needed: #{reason}")

    minio = MinIO.start!()
    gcs = FakeGCS.start!(elem(installs[:gcs], 1))
    azure = Azurite.start!(elem(installs[:azure], 1))

    on_exit(fn ->
      MinIO.stop(minio)
      FakeGCS.stop(gcs)
      Azurite.stop(azure)
    end)

    %{minio: minio, gcs: gcs, azure: azure}
  end

  defp run(task, args), do: MixTask.run(task, args)

  # A consolidated tree: the sample array at img/a, and an int16 array b.
  defp write_tree!(path) do
    {:ok, root} = ExZarr.create_group(path: path, attributes: %{"title" => "tree"})
    MixTask.sample_array!(storage: root.storage, prefix: "img/a")
    {:ok, b} = ExZarr.Group.create_array(root, "b", shape: {6}, chunks: {4}, dtype: :int16)
    :ok = ExZarr.Array.set_slice(b, :binary.copy(<<9, 0>>, 6))
    {:ok, root} = ExZarr.consolidate(root)
    root
  end

  # Copies every key of `from` into `to`.
  defp copy_store(from, to) do
    {:ok, keys} = Storage.list(from)
    for key <- keys, do: :ok = Storage.put(to, key, elem(Storage.get(from, key), 1))
  end

  defp with_env(vars, fun) do
    previous = for {name, _} <- vars, do: {name, System.get_env(name)}
    System.put_env(vars)

    try do
      fun.()
    after
      for {name, value} <- previous,
          do: if(value, do: System.put_env(name, value), else: System.delete_env(name))
    end
  end

  # The lines that do not depend on where the array is stored.
  defp same_facts(text), do: text |> String.split("\n") |> Enum.reject(&(&1 =~ ~r/^Store /))

  defp expected(path) do
    %{
      info: elem(run(Mix.Tasks.Zarr.Info, [path, "--prefix", "img/a"]), 1),
      tree: elem(run(Mix.Tasks.Zarr.Tree, [path]), 1)
    }
  end

  test "s3://, gs:// and az:// with credentials from the environment and --endpoint", ctx do
    local = write_tree!(Path.join(ctx.tmp_dir, "t.zarr"))
    expected = expected(Path.join(ctx.tmp_dir, "t.zarr"))

    {:ok, s3} = Storage.new(:s3, MinIO.store_opts(ctx.minio, "tasks", "trees/t.zarr"))
    {:ok, gs} = Storage.new(:gcs, FakeGCS.store_opts(ctx.gcs, "tasks", "trees/t.zarr"))
    {:ok, az} = Storage.new(:azure, Azurite.store_opts(ctx.azure, "tasks", "trees/t.zarr"))
    for store <- [s3, gs, az], do: copy_store(local.storage, store)

    {user, password} = MinIO.credentials()
    {account, key} = Azurite.account()

    env = [
      {"AWS_ACCESS_KEY_ID", user},
      {"AWS_SECRET_ACCESS_KEY", password},
      {"AZURE_STORAGE_ACCOUNT", account},
      {"AZURE_STORAGE_KEY", key}
    ]

    with_env(env, fn ->
      for {url, server} <- [
            {"s3://tasks/trees/t.zarr", ctx.minio},
            {"gs://tasks/trees/t.zarr", ctx.gcs},
            {"az://tasks/trees/t.zarr", ctx.azure}
          ] do
        endpoint = ["--endpoint", server.endpoint]
        args = [url, "--prefix", "img/a"] ++ endpoint
        assert {0, text, ""} = run(Mix.Tasks.Zarr.Info, args)
        assert same_facts(text) == same_facts(expected.info), url
        assert text =~ "Store              : #{url}/img/a\n"

        assert {0, tree, ""} = run(Mix.Tasks.Zarr.Tree, [url | endpoint])
        assert tree == expected.tree

        assert {0, ok, ""} = run(Mix.Tasks.Zarr.Validate, [url | endpoint])
        assert ok == "OK: 4 nodes, 3 stored chunks checked, no problem found"
      end

      # a corrupt chunk on S3 is found there
      :ok = Storage.put(s3, "b/c/1", "garbage")
      args = ["s3://tasks/trees/t.zarr", "--endpoint", ctx.minio.endpoint]
      assert {1, "", err} = run(Mix.Tasks.Zarr.Validate, args)
      assert err =~ ~r"^b/c/1: does not decode"m
    end)

    # with wrong credentials S3 refuses, and the task says so
    with_env([{"AWS_ACCESS_KEY_ID", "nobody"}, {"AWS_SECRET_ACCESS_KEY", "wrong"}], fn ->
      args = ["s3://tasks/trees/t.zarr", "--endpoint", ctx.minio.endpoint]
      assert {1, "", err} = run(Mix.Tasks.Zarr.Info, args)
      assert err =~ "s3://tasks/trees/t.zarr: "
    end)
  end

  @tag capture_log: true
  test "http(s):// cannot list: what needs a listing is unknown or read chunk by chunk", ctx do
    root = Path.join(ctx.tmp_dir, "www")
    write_tree!(Path.join(root, "t.zarr"))
    expected = expected(Path.join(root, "t.zarr"))
    {:ok, nginx} = Nginx.start(root, tls: true)

    try do
      url = Nginx.url(nginx) <> "/t.zarr"
      assert {0, text, ""} = run(Mix.Tasks.Zarr.Info, [url, "--prefix", "img/a"])
      unknown = ~r/^(No\. bytes stored|Storage ratio|Chunks initialized) /
      known = Enum.reject(same_facts(expected.info), &(&1 =~ unknown))
      assert Enum.reject(same_facts(text), &(&1 =~ unknown)) == known
      assert text =~ "Chunks initialized : unknown (the store cannot list)"

      # the tree comes from the consolidated metadata; validate reads every chunk of the grid
      assert {0, tree, ""} = run(Mix.Tasks.Zarr.Tree, [url])
      assert tree == expected.tree
      assert {0, ok, ""} = run(Mix.Tasks.Zarr.Validate, [url])
      assert ok == "OK: 4 nodes, 3 stored chunks checked, no problem found"

      # https with the test CA; a token in a header
      https = Nginx.url(nginx, :https) <> "/t.zarr"
      assert {1, "", _} = run(Mix.Tasks.Zarr.Tree, [https])
      assert {0, ^tree, ""} = run(Mix.Tasks.Zarr.Tree, [https, "--cacertfile", nginx.ca])

      token_url = Nginx.url(nginx) <> "/token/t.zarr"
      assert {1, "", _} = run(Mix.Tasks.Zarr.Tree, [token_url])
      header = "Authorization: Bearer #{Nginx.token()}"
      assert {0, ^tree, ""} = run(Mix.Tasks.Zarr.Tree, [token_url, "--header", header])
    after
      Nginx.stop(nginx)
    end
  end
end
