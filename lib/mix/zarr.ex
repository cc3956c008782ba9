defmodule Mix.Zarr do
  @moduledoc false
  # What the zarr.* tasks share: the store options of the command line, opening the node a
  # URL names, and errors a person can act on.

  @store_switches [
    prefix: :string,
    endpoint: :string,
    region: :string,
    anonymous: :boolean,
    path_style: :boolean,
    account: :string,
    header: :keep,
    cacertfile: :string,
    zarr_format: :integer,
    consolidated: :boolean
  ]

  @doc false
  # The part of the tasks' docs about stores (interpolated into each task's moduledoc).
  def store_doc do
    """
    ## Stores

    `URL` is anything `ExZarr.open/1` opens:

      * a path (`data/a.zarr`) or `file:///data/a.zarr`;
      * `zip:///data/a.zip` (a zarr-python `ZipStore`, read);
      * `s3://bucket/prefix` - credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
        `AWS_SESSION_TOKEN`; region from `AWS_REGION`; endpoint from `AWS_ENDPOINT_URL_S3` or
        `AWS_ENDPOINT_URL`;
      * `gs://bucket/prefix` - token from `GOOGLE_OAUTH_ACCESS_TOKEN`, emulator from
        `STORAGE_EMULATOR_HOST`;
      * `az://container/prefix` - `AZURE_STORAGE_CONNECTION_STRING`, or
        `AZURE_STORAGE_ACCOUNT` with `AZURE_STORAGE_KEY` or `AZURE_STORAGE_SAS_TOKEN`;
      * `http://` and `https://` - read-only; groups need consolidated metadata there.

    Store options (each applies to the stores that take it; any other is refused):

      * `--prefix PATH` - the node's path inside the store (default: its root)
      * `--endpoint URL` - an S3-compatible server, a GCS emulator, an Azure endpoint
      * `--region NAME` - the S3 region
      * `--anonymous` - unsigned S3 requests (public buckets)
      * `--path-style` / `--no-path-style` - S3 bucket in the path or in the host name
      * `--account NAME` - the Azure storage account
      * `--header "Name: value"` - an HTTP(S) request header (a token); may be repeated
      * `--cacertfile FILE` - CAs to trust for https
      * `--zarr-format 2|3` - open only that format (default: detect)
      * `--consolidated` / `--no-consolidated` - require or ignore consolidated metadata
    """
  end

  @doc false
  # Parses the command line: `{url, store_options, own_options}`; raises Mix.Error on a bad one.
  @spec parse!([String.t()], keyword(), String.t()) :: {String.t(), keyword(), keyword()}
  def parse!(args, own_switches, task) do
    {parsed, rest, invalid} = OptionParser.parse(args, strict: @store_switches ++ own_switches)

    case {rest, invalid} do
      {[url], []} ->
        {store, own} = Keyword.split(parsed, Keyword.keys(@store_switches))
        {url, store_options(store), own}

      {_, [{switch, _} | _]} ->
        Mix.raise("#{task}: unknown or invalid option #{switch}; see mix help #{task}")

      {_, []} ->
        Mix.raise("#{task} takes one URL or path; see mix help #{task}")
    end
  end

  defp store_options(parsed) do
    Enum.flat_map(parsed, fn
      {:header, header} -> [headers: header(header)]
      {:consolidated, use?} -> [use_consolidated: use?]
      other -> [other]
    end)
    |> merge_headers()
  end

  defp header(text) do
    case String.split(text, ":", parts: 2) do
      [name, value] when name != "" -> {String.trim(name), String.trim(value)}
      _ -> Mix.raise("--header must be \"Name: value\", got #{inspect(text)}")
    end
  end

  defp merge_headers(opts) do
    case Keyword.get_values(opts, :headers) do
      [] -> opts
      headers -> Keyword.delete(opts, :headers) ++ [headers: headers]
    end
  end

  @doc false
  # Starts ExZarr and opens the node at `url`: `{:ok, node}` or `{:error, message}`.
  @spec open(String.t(), keyword()) ::
          {:ok, ExZarr.Array.t() | ExZarr.Group.t()} | {:error, String.t()}
  def open(url, opts) do
    Mix.Task.run("app.config")
    {:ok, _} = Application.ensure_all_started(:ex_zarr)

    case ExZarr.open([path: url] ++ opts) do
      {:ok, node} -> {:ok, node}
      {:error, reason} -> {:error, "#{url}: #{message(reason)}"}
    end
  end

  @doc false
  # Like open/2, raising Mix.Error (exit status 1) when the node cannot be opened.
  @spec open!(String.t(), keyword()) :: ExZarr.Array.t() | ExZarr.Group.t()
  def open!(url, opts) do
    case open(url, opts) do
      {:ok, node} -> node
      {:error, message} -> Mix.raise(message)
    end
  end

  @doc false
  # An error reason for a person.
  @spec message(term()) :: String.t()
  def message(:not_found), do: "no Zarr array or group there"

  def message({:unknown_option, name}),
    do: "the option --#{String.replace(to_string(name), "_", "-")} does not apply to this store"

  def message({:unsupported_url_scheme, scheme}),
    do: "#{scheme}:// is not a store ExZarr opens (paths, file, zip, s3, gs, az, http, https)"

  def message({:invalid_metadata, text}) when is_binary(text),
    do: "the metadata does not conform: " <> text

  def message({:invalid_option, name, value}),
    do: "#{String.replace(to_string(name), "_", " ")} cannot be #{inspect(value)}"

  def message(reason), do: inspect(reason)
end
