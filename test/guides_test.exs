defmodule ExZarr.GuidesTest do
  # Runs the code of every guide, so that a guide cannot rot: each guide's ```elixir blocks
  # in order, in one binding (a block sees the variables of the blocks before it), and its
  # ```python blocks in between with the test venv's Python (zarr-python, tensorstore), all
  # in a fresh working folder. A block right after `<!-- not run: reason -->` is skipped.
  # Object-store examples run against the test servers, reached through the environment
  # variables a user would set (AWS_*, STORAGE_EMULATOR_HOST, AZURE_STORAGE_*).
  # The working directory and the environment are global: not async.
  use ExUnit.Case, async: false

  import ExUnit.CaptureIO
  alias ExZarr.Test.{Azurite, FakeGCS, MinIO, Python}

  @moduletag :tmp_dir
  @moduletag timeout: 600_000

  @guides Path.wildcard(Path.expand("../guides/*.md", __DIR__))

  for path <- @guides, do: @external_resource(path)

  setup_all do
    minio = MinIO.start!()
    gcs = FakeGCS.start!(ok!(FakeGCS.install()))
    azure = Azurite.start!(ok!(Azurite.install()))

    # the buckets and the container the guides use (MinIO may answer 503 for a while)
    retry(fn -> MinIO.store_opts(minio, "my-bucket", "") end, 40)
    FakeGCS.store_opts(gcs, "my-bucket", "")
    Azurite.store_opts(azure, "my-container", "")

    on_exit(fn ->
      MinIO.stop(minio)
      FakeGCS.stop(gcs)
      Azurite.stop(azure)
    end)

    {user, password} = MinIO.credentials()
    {account, key} = Azurite.account()

    env = [
      # found from the project's folder, before the guides run in theirs
      {"EXZARR_PYTHON", Python.executable()},
      {"AWS_ENDPOINT_URL", minio.endpoint},
      {"AWS_ACCESS_KEY_ID", user},
      {"AWS_SECRET_ACCESS_KEY", password},
      {"STORAGE_EMULATOR_HOST", gcs.endpoint},
      {"AZURE_STORAGE_CONNECTION_STRING",
       "DefaultEndpointsProtocol=http;AccountName=#{account};AccountKey=#{key};" <>
         "BlobEndpoint=#{azure.endpoint}"}
    ]

    %{env: env}
  end

  @doc false
  # The code blocks of a guide: `{:elixir | :python | {:skipped, reason}, code, line}`.
  def blocks(text) do
    ~r/(?:<!-- not run: ([^>]*?) -->\s*\n)?^```(elixir|python)\n(.*?)^```$/ms
    |> Regex.scan(text, return: :index)
    |> Enum.map(fn [{start, _} | groups] ->
      [skip, lang, code] = Enum.map(groups, &slice(text, &1))
      line = text |> binary_part(0, start) |> String.split("\n") |> length()
      kind = if skip != "", do: {:skipped, skip}, else: String.to_atom(lang)
      {kind, code, line}
    end)
  end

  defp slice(_text, {-1, 0}), do: ""
  defp slice(text, {start, length}), do: binary_part(text, start, length)

  test "the guides are there, and the README links each of them" do
    names = Enum.map(@guides, &Path.basename/1)
    assert Enum.sort(names) == ["interop.md", "performance.md", "storage.md"]
    readme = File.read!(Path.expand("../README.md", __DIR__))
    for name <- names, do: assert(readme =~ "guides/" <> name)
  end

  test "blocks are found, skipped only with a reason" do
    text = """
    ```elixir
    1 + 1
    ```
    <!-- not run: needs a server -->
    ```elixir
    :skipped
    ```
    ```python
    print(1)
    ```
    """

    assert [
             {:elixir, "1 + 1\n", 1},
             {{:skipped, "needs a server"}, ":skipped\n", 4},
             {:python, "print(1)\n", 8}
           ] = blocks(text)
  end

  describe "guide:" do
    for path <- @guides do
      @path path
      test Path.basename(path), %{tmp_dir: dir, env: env} do
        blocks = blocks(File.read!(@path))
        assert Enum.any?(blocks, &(elem(&1, 0) == :elixir))
        output = capture_io(fn -> run_guide(@path, blocks, dir, env) end)
        if System.get_env("GUIDES_OUTPUT"), do: IO.puts(:stderr, output)
      end
    end
  end

  defp retry(fun, attempts) do
    fun.()
  rescue
    e in RuntimeError ->
      if attempts == 1, do: reraise(e, __STACKTRACE__)
      Process.sleep(250)
      retry(fun, attempts - 1)
  end

  defp ok!({:ok, value}), do: value
  defp ok!({:error, reason}), do: raise("a test server is needed: #{reason}")

  defp run_guide(path, blocks, dir, env) do
    previous_env = for {name, _} <- env, do: {name, System.get_env(name)}
    previous_dir = File.cwd!()
    System.put_env(env)
    File.cd!(dir)

    try do
      Enum.reduce(blocks, [], fn block, binding -> run_block(path, block, binding) end)
    after
      File.cd!(previous_dir)

      for {name, value} <- previous_env,
          do: if(value, do: System.put_env(name, value), else: System.delete_env(name))
    end
  end

  defp run_block(path, {:elixir, code, line}, binding) do
    IO.puts("--- #{Path.basename(path)}:#{line}")
    {_result, binding} = Code.eval_string(code, binding, file: path, line: line + 1)
    binding
  end

  defp run_block(path, {:python, code, line}, binding) do
    IO.puts("--- #{Path.basename(path)}:#{line} (python)")
    IO.write(Python.run!(code))
    binding
  end

  defp run_block(_path, {{:skipped, _reason}, _code, _line}, binding), do: binding
end
